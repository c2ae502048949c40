package io.llmprof.streams.host;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.llmprof.streams.state.proto.IntervalChunk;
import java.util.List;
import org.junit.jupiter.api.Test;

class IntervalChunksTest {
    private static IntervalBuffer<HostEv> hostEvents(int n, long from) {
        IntervalBuffer<HostEv> b = new IntervalBuffer<>();
        for (int i = 0; i < n; i++) {
            long t = from + i * 1_000L;
            b.add(new HostEv(
                    t, t + 400, i % 3 == 0 ? Interval.NO_CORR : 10_000 + i, i % 5, i % 7 == 0 ? null : "api" + i % 4));
        }
        return b;
    }

    private static String contents(IntervalBuffer<? extends Interval> b) {
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < b.size(); i++) {
            Interval x = b.get(i);
            s.append(x.start)
                    .append('/')
                    .append(x.end)
                    .append('/')
                    .append(x.corr)
                    .append('/')
                    .append(x.flags);
            s.append('/')
                    .append(x instanceof HostEv h ? h.name : String.valueOf(((GpuOp) x).stream))
                    .append(' ');
        }
        return s.toString();
    }

    private static IntervalBuffer<HostEv> readHost(List<ByteString> chunks) {
        IntervalBuffer<HostEv> back = new IntervalBuffer<>();
        IntervalChunks.read(chunks, back, true);
        return back;
    }

    @Test
    void chunksRoundTripAndAverageAboutTheMeanLength() {
        IntervalBuffer<HostEv> b = hostEvents(5_000, 1_760_000_000_000_000_000L);
        List<ByteString> chunks = new IntervalChunks().encode(b, true);
        assertThat(contents(readHost(chunks))).isEqualTo(contents(b));
        assertThat(chunks.size()).isBetween(5_000 / IntervalChunks.MEAN / 2, 5_000 / IntervalChunks.MEAN * 2);
        IntervalBuffer<GpuOp> gpu = new IntervalBuffer<>();
        gpu.add(new GpuOp(Long.MIN_VALUE, Long.MIN_VALUE + 5, Long.MAX_VALUE, -1, GpuOp.NO_STREAM));
        gpu.add(new GpuOp(5, Long.MAX_VALUE, Interval.NO_CORR, 0, 7));
        IntervalBuffer<GpuOp> back = new IntervalBuffer<>();
        IntervalChunks.read(new IntervalChunks().encode(gpu, false), back, false);
        assertThat(contents(back)).isEqualTo(contents(gpu));
    }

    @Test
    void unchangedChunksAreCopiedAndTheBytesDoNotDependOnWhatWasCached() {
        IntervalBuffer<HostEv> b = hostEvents(3_000, 0);
        IntervalChunks cache = new IntervalChunks();
        List<ByteString> before = cache.encode(b, true);
        // the lane goes on (appends) and the front is released (pruned)
        for (int i = 0; i < 300; i++) {
            b.add(new HostEv(3_000_000L + i * 1_000L, 3_000_000L + i * 1_000L + 10, 1, 0, "late api"));
        }
        b.prune(1_000_000, x -> {});
        List<ByteString> after = cache.encode(b, true);
        assertThat(after).isEqualTo(new IntervalChunks().encode(b, true));
        long copied = after.stream()
                .filter(c -> before.stream().anyMatch(old -> old == c))
                .count();
        assertThat(copied).isGreaterThan(after.size() / 2);
        assertThat(contents(readHost(after))).isEqualTo(contents(b));
    }

    @Test
    void aLateIntervalInsideACachedChunkIsEncodedAgain() {
        IntervalBuffer<HostEv> b = hostEvents(2_000, 0);
        IntervalChunks cache = new IntervalChunks();
        cache.encode(b, true);
        b.add(new HostEv(500_500, 500_600, 42, 1, "inserted late"));
        List<ByteString> again = cache.encode(b, true);
        assertThat(again).isEqualTo(new IntervalChunks().encode(b, true));
        assertThat(contents(readHost(again))).isEqualTo(contents(b));
    }

    /** A run-long interval at the front blocks pruning from the front: the buffer compacts from the middle. */
    @Test
    void aCompactionFromTheMiddleIsEncodedAgain() {
        IntervalBuffer<HostEv> b = new IntervalBuffer<>();
        b.add(new HostEv(0, Long.MAX_VALUE, 1, 0, "run-long annotation"));
        for (int i = 1; i < 3_000; i++) {
            b.add(new HostEv(i * 1_000L, i * 1_000L + 10, 10 + i, 0, "api" + i % 3));
        }
        IntervalChunks cache = new IntervalChunks();
        List<ByteString> before = cache.encode(b, true);
        b.prune(2_000_000, x -> {});
        assertThat(b.size()).isLessThan(2_000).isGreaterThan(0);
        List<ByteString> after = cache.encode(b, true);
        assertThat(after).isEqualTo(new IntervalChunks().encode(b, true)).isNotEqualTo(before);
        assertThat(contents(readHost(after))).isEqualTo(contents(b));
        // then appends only: every chunk but the growing last one is the one written before
        b.add(new HostEv(4_000_000, 4_000_010, 5, 0, "api0"));
        List<ByteString> again = cache.encode(b, true);
        assertThat(again).isEqualTo(new IntervalChunks().encode(b, true));
        for (int i = 0; i < again.size() - 1; i++) {
            assertThat(again.get(i)).isSameAs(after.get(i));
        }
    }

    @Test
    void aDamagedChunkIsRefused() {
        ByteString bad = IntervalChunk.newBuilder()
                .addStartDelta(1)
                .addDuration(1)
                .addFlags(0)
                .addHasCorr(false)
                .addName(3)
                .build()
                .toByteString();
        assertThatThrownBy(() -> readHost(List.of(bad)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("outside its chunk's table");
        ByteString ragged = IntervalChunk.newBuilder().addStartDelta(1).build().toByteString();
        assertThatThrownBy(() -> readHost(List.of(ragged)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("different lengths");
        assertThatThrownBy(() -> readHost(List.of(ByteString.copyFrom(new byte[] {(byte) 0xff}))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("corrupt interval chunk");
    }

    /** GPU ops keep their kernel name as an index into the tracker's table; a full table names new kernels (other). */
    @Test
    void kernelNamesTravelAsIndexesIntoOneTable() {
        KernelNames names = new KernelNames();
        IntervalBuffer<GpuOp> gpu = new IntervalBuffer<>();
        for (int i = 0; i < 300; i++) {
            String name = i % 3 == 2 ? null : names.intern("kernel_" + (i % 7) + "<float, 128>(Params)");
            gpu.add(new GpuOp(i * 1_000L, i * 1_000L + 500, i, i % 3 == 2 ? GpuOp.MEMOP : GpuOp.KERNEL, 7, name));
        }
        List<ByteString> chunks = new IntervalChunks().encode(gpu, false, names);
        // no chunk repeats the names: each op costs a one-byte index
        assertThat(chunks.stream().mapToInt(ByteString::size).sum()).isLessThan(300 * 16);
        KernelNames table = new KernelNames();
        names.names.forEach(table::add);
        IntervalBuffer<GpuOp> back = new IntervalBuffer<>();
        IntervalChunks.read(chunks, back, false, table);
        for (int i = 0; i < gpu.size(); i++) {
            assertThat(back.get(i).name).isEqualTo(gpu.get(i).name);
            assertThat(back.get(i).start).isEqualTo(gpu.get(i).start);
        }

        KernelNames full = new KernelNames();
        for (int i = 0; i < KernelNames.MAX; i++) {
            full.intern("k" + i);
        }
        assertThat(full.intern("k5")).isEqualTo("k5");
        // the last slot is (other): k1023 and every later new name
        assertThat(full.intern("k" + (KernelNames.MAX - 1))).isEqualTo(io.llmprof.events.host.HostStep.OTHER);
        assertThat(full.intern("one too many")).isEqualTo(io.llmprof.events.host.HostStep.OTHER);
        assertThat(full.names).hasSize(KernelNames.MAX);
        assertThat(full.ref(io.llmprof.events.host.HostStep.OTHER)).isEqualTo(KernelNames.MAX);
    }
}
