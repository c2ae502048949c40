package io.llmprof.streams.processor;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.TraceEvent;
import io.llmprof.streams.boundary.PassSegmenter;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.boundary.SegmenterState;
import io.llmprof.streams.boundary.SegmenterStateCodec;
import org.apache.kafka.common.serialization.Serializer;
import org.junit.jupiter.api.Test;

class SegmenterStateSerdeTest {
    private static SegmenterState state(String rank, int kernels) {
        PassSegmenter s =
                new PassSegmenter(SegmenterConfig.resolve(null, "generic", "gemm_kernel_0", 2), "job", "run", rank);
        for (int i = 0; i < kernels; i++) {
            s.accept(TraceEvent.kernel("gemm_kernel_" + (i % 3), 1_000L * i, 500L, 7, i));
        }
        return s.state();
    }

    @Test
    void theBytesEncodedForAPutAreTheOnesThePutWrites() {
        SegmenterStateSerde serde = new SegmenterStateSerde();
        Serializer<SegmenterState> serializer = serde.serializer();
        SegmenterState a = state("0", 20);

        byte[] encoded = serde.encodeForPut(a);

        assertThat(encoded).isEqualTo(SegmenterStateCodec.encode(a));
        assertThat(serializer.serialize("t", a)).isSameAs(encoded);
        // used once: the next put of the same object encodes again
        assertThat(serializer.serialize("t", a)).isNotSameAs(encoded).isEqualTo(encoded);
    }

    @Test
    void anotherStateIsEncodedAsItIsNotAsTheOneKept() {
        SegmenterStateSerde serde = new SegmenterStateSerde();
        SegmenterState a = state("0", 20);
        SegmenterState b = state("1", 5);
        serde.encodeForPut(a);

        assertThat(serde.serializer().serialize("t", b)).isEqualTo(SegmenterStateCodec.encode(b));
        assertThat(serde.serializer().serialize("t", a)).isEqualTo(SegmenterStateCodec.encode(a));
    }

    @Test
    void forgottenBytesAreNotReused() {
        SegmenterStateSerde serde = new SegmenterStateSerde();
        SegmenterState a = state("0", 20);
        byte[] encoded = serde.encodeForPut(a);
        serde.forget();

        assertThat(serde.serializer().serialize("t", a)).isNotSameAs(encoded).isEqualTo(encoded);
    }

    @Test
    void theKeptBytesBelongToTheThreadThatEncoded() throws Exception {
        SegmenterStateSerde serde = new SegmenterStateSerde();
        SegmenterState a = state("0", 20);
        byte[] encoded = serde.encodeForPut(a);
        byte[][] seen = new byte[1][];
        Thread other = new Thread(() -> seen[0] = serde.serializer().serialize("t", a));
        other.start();
        other.join(10_000);

        assertThat(seen[0]).isNotSameAs(encoded).isEqualTo(encoded);
        assertThat(serde.serializer().serialize("t", a)).isSameAs(encoded);
    }
}
