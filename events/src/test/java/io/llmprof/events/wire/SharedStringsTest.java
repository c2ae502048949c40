package io.llmprof.events.wire;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.KernelFamily;
import io.llmprof.events.LayerHalf;
import io.llmprof.events.LayerRecord;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SharedStringsTest {
    @Test
    void aRepeatedStringComesBackAsTheFirstInstanceAndLongOnesAreNotKept() {
        SharedStrings shared = new SharedStrings();
        String first = new String("gemm_fp16_128x128");
        String again = new String("gemm_fp16_128x128");

        assertThat(shared.of(first)).isSameAs(first);
        assertThat(shared.of(again)).isSameAs(first);
        assertThat(shared.of(null)).isNull();
        String longName = "k".repeat(SharedStrings.MAX_LENGTH + 1);
        String longAgain = new String(longName);
        assertThat(shared.of(longName)).isSameAs(longName);
        assertThat(shared.of(longAgain)).isSameAs(longAgain);
    }

    @Test
    void manyDistinctStringsStayCorrectAndBounded() {
        SharedStrings shared = new SharedStrings();
        // far more distinct strings than slots: each still comes back equal (a miss overwrites a slot)
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < 100_000; i++) {
                String s = "name-" + i;
                assertThat(shared.of(s)).isEqualTo(s);
            }
        }
    }

    @Test
    void decodedLayersShareTheirRepeatedNames() throws Exception {
        OutputRecordSerde<LayerRecord> serde = OutputRecordSerde.layers();
        List<LayerRecord> decoded = new ArrayList<>();
        for (int layer = 0; layer < 2; layer++) {
            LayerRecord r = new LayerRecord(
                    "job",
                    "run-7",
                    "0",
                    3,
                    layer,
                    "attention",
                    0,
                    10,
                    10,
                    10,
                    10,
                    2,
                    0,
                    Map.of("gemm", 5L),
                    null,
                    List.of(new KernelFamily("sm90_xmma_gemm_bf16", "gemm", 2, 10, 6)),
                    List.of(new LayerHalf("attn", 0, 5, 5, 1)));
            decoded.add(serde.decode(serde.encode(r)));
        }
        LayerRecord a = decoded.get(0);
        LayerRecord b = decoded.get(1);
        assertThat(b.job()).isSameAs(a.job());
        assertThat(b.run()).isSameAs(a.run());
        assertThat(b.rank()).isSameAs(a.rank());
        assertThat(b.type()).isSameAs(a.type());
        assertThat(b.families().get(0).family()).isSameAs(a.families().get(0).family());
        assertThat(b.families().get(0).category()).isSameAs(a.families().get(0).category());
        assertThat(b.halves().get(0).label()).isSameAs(a.halves().get(0).label());
        assertThat(b.categories().keySet().iterator().next())
                .isSameAs(a.categories().keySet().iterator().next());
        assertThat(b.families()).isEqualTo(a.families());
    }
}
