package io.llmprof.streams.host;

/** A buffered event with a start and an end (ns); ordered by start inside a {@link IntervalBuffer}. */
abstract class Interval {
    /** Correlation id when the event carries none. */
    static final long NO_CORR = Long.MIN_VALUE;

    final long start;
    final long end;
    final long corr;
    final int flags;

    Interval(long start, long end, long corr, int flags) {
        this.start = start;
        this.end = end;
        this.corr = corr;
        this.flags = flags;
    }

    final boolean has(int flag) {
        return (flags & flag) != 0;
    }
}

/** One kernel, memcpy or memset of the rank's device. */
final class GpuOp extends Interval {
    static final int KERNEL = 1;
    static final int MEMOP = 2;
    static final int COMM = 4;
    /** Nsight said the kernel came from a graph. */
    static final int GRAPH_ID = 8;

    static final int D2H = 16;
    /** Stream key when the source gives none. */
    static final long NO_STREAM = Long.MIN_VALUE;

    final long stream;
    /** The kernel's name (per-kernel GPU time of a window); null for memcpy / memset. */
    final String name;

    GpuOp(long start, long end, long corr, int flags, long stream) {
        this(start, end, corr, flags, stream, null);
    }

    GpuOp(long start, long end, long corr, int flags, long stream, String name) {
        super(start, end, corr, flags);
        this.stream = stream;
        this.name = name;
    }
}

/** One runtime/driver API call or host annotation range. */
final class HostEv extends Interval {
    // the low byte holds ApiNames flags for runtime calls
    static final int RUNTIME = 1 << 8;
    static final int ANNOTATION = 1 << 9;
    static final int PREP = 1 << 10;
    /** An annotation that makes (or could make) a step window: excluded from the NVTX breakdown. */
    static final int STEP_RANGE = 1 << 11;

    final String name;

    HostEv(long start, long end, long corr, int flags, String name) {
        super(start, end, corr, flags);
        this.name = name;
    }

    int apiFlags() {
        return flags & 0xFF;
    }
}
