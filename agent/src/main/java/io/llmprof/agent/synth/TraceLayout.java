package io.llmprof.agent.synth;

/** Where the runtime/driver calls (launches, copies, syncs) go in the file. */
public enum TraceLayout {
    /**
     * All host events (annotations, cpu_ops, runtime calls) of the whole trace in start-time order, then all GPU
     * events in start-time order: each lane is ordered, as llmprof's architecture describes Kineto files.
     */
    HOST_FIRST,
    /**
     * As a raw Kineto file really is: cpu_ops and annotations first, then the CUPTI activity records with each
     * GPU event followed by its runtime call. A streaming reader sees the runtime calls of the whole trace long
     * after the cpu_ops: a stress test of its reorder window.
     */
    KINETO
}
