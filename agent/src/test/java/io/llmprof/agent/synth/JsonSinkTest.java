package io.llmprof.agent.synth;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class JsonSinkTest {
    private static String written(ThrowingWrite write) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (JsonSink sink = new JsonSink(bytes, 64)) {
            write.to(sink);
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    private interface ThrowingWrite {
        void to(JsonSink sink) throws IOException;
    }

    @Test
    void longsPrintLikeLongToString() throws IOException {
        long[] edges = {0, 1, 9, 10, 99, 100, 999_999, 1_000_000, Long.MAX_VALUE, -1, -10, Long.MIN_VALUE};
        for (long v : edges) {
            assertThat(written(s -> s.num(v))).isEqualTo(Long.toString(v));
        }
        SplittableRandom random = new SplittableRandom(1);
        for (int i = 0; i < 10_000; i++) {
            long v = random.nextLong() >>> random.nextInt(64);
            assertThat(written(s -> s.num(v))).isEqualTo(Long.toString(v));
        }
    }

    @Test
    void nanosPrintAsMicrosWithExactlyThreeFractionDigits() throws IOException {
        assertThat(written(s -> s.micros(0))).isEqualTo("0.000");
        assertThat(written(s -> s.micros(1))).isEqualTo("0.001");
        assertThat(written(s -> s.micros(1_760_000_000_000_000_123L))).isEqualTo("1760000000000000.123");
        assertThat(written(s -> s.micros(1_760_000_000_000_001_000L))).isEqualTo("1760000000000001.000");
        // consecutive values that cross a cached-prefix boundary and go back
        assertThat(written(s -> {
                    s.micros(1_999_999_999_999L);
                    s.raw(new byte[] {' '});
                    s.micros(2_000_000_000_001L);
                    s.raw(new byte[] {' '});
                    s.micros(1_999_000_000_000L);
                }))
                .isEqualTo("1999999999.999 2000000000.001 1999000000.000");
        SplittableRandom random = new SplittableRandom(2);
        for (int i = 0; i < 10_000; i++) {
            long ns = random.nextLong(0, 4_000_000_000_000_000_000L) >>> random.nextInt(62);
            assertThat(written(s -> s.micros(ns)))
                    .isEqualTo(BigDecimal.valueOf(ns, 3).toPlainString());
        }
    }

    @Test
    void countsEveryByteIncludingRunsLargerThanTheBuffer() throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        byte[] big = new byte[200];
        try (JsonSink sink = new JsonSink(bytes, 64)) {
            sink.ascii("abc");
            sink.raw(big);
            sink.num(12345);
            assertThat(sink.bytes()).isEqualTo(3 + 200 + 5);
        }
        assertThat(bytes.size()).isEqualTo(208);
    }
}
