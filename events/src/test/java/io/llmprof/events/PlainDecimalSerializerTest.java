package io.llmprof.events;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class PlainDecimalSerializerTest {
    @Test
    void writesWhatToPlainStringWrites() throws Exception {
        List<BigDecimal> values = new ArrayList<>();
        long[] edges = {
            0,
            1,
            -1,
            5,
            -5,
            999,
            1000,
            -1000,
            1001,
            123456789,
            999_999_999_999_999_999L,
            -999_999_999_999_999_999L,
            1_000_000_000_000_000_000L,
            Long.MAX_VALUE,
            Long.MIN_VALUE
        };
        for (long u : edges) {
            for (int scale = -2; scale <= 11; scale++) {
                values.add(BigDecimal.valueOf(u, scale));
            }
        }
        SplittableRandom random = new SplittableRandom(42);
        for (int i = 0; i < 20_000; i++) {
            long u = random.nextLong() >> random.nextInt(64);
            values.add(BigDecimal.valueOf(u, random.nextInt(-3, 12)));
        }
        values.add(new BigDecimal(new BigInteger("123456789012345678901234567890"), 3));
        values.add(new BigDecimal("1.500")); // trailing zeros kept
        for (BigDecimal v : values) {
            assertThat(Json.mapper().writeValueAsString(v)).as("%s", v).isEqualTo(v.toPlainString());
            assertThat(Json.mapper().writeValueAsBytes(List.of(v)))
                    .as("%s as UTF-8", v)
                    .isEqualTo(("[" + v.toPlainString() + "]").getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
    }

    @Test
    void aTreeStillHoldsTheExactDecimal() {
        JsonNode node = Json.mapper().valueToTree(List.of(BigDecimal.valueOf(1_760_000_000_000_000_244L, 3)));
        assertThat(node.get(0).decimalValue()).isEqualTo(BigDecimal.valueOf(1_760_000_000_000_000_244L, 3));
    }
}
