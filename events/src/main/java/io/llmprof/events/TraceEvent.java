package io.llmprof.events;

import java.util.Objects;

/**
 * One trace event on the wire. Times are nanoseconds in the trace's own timebase (Kineto µs x 1000,
 * fractions kept). Optional fields are null when the source does not carry them.
 *
 * @param kind what the event is
 * @param name kernel, API, cpu_op or annotation name, as in the source
 * @param startNs start time
 * @param durNs duration, never negative
 * @param device GPU device index (GPU activity), null otherwise
 * @param stream GPU stream (GPU activity), or thread id for host events
 * @param correlation launch correlation id (kernels and runtime launches)
 * @param externalId {@code External id} (runtime launch and cpu_op)
 * @param inputDims cpu_op {@code Input Dims} as compact JSON text
 * @param graphId the CUDA graph a kernel was launched from (Nsight {@code graphId}), null for eager
 *     kernels and when the source does not say (Kineto: a kernel whose launch correlation is a graph launch)
 */
public record TraceEvent(
        Kind kind,
        String name,
        long startNs,
        long durNs,
        Integer device,
        Long stream,
        Long correlation,
        Long externalId,
        String inputDims,
        Long graphId) {

    public enum Kind {
        KERNEL,
        MEMCPY,
        MEMSET,
        /** cuda_runtime / cuda_driver / hip runtime call. */
        RUNTIME,
        CPU_OP,
        /** Host-side user annotation (step markers such as ProfilerStep#N). */
        USER_ANNOTATION,
        /** GPU-side user annotation. */
        GPU_ANNOTATION;

        public boolean isGpuActivity() {
            return this == KERNEL || this == MEMCPY || this == MEMSET;
        }
    }

    public TraceEvent {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(name, "name");
        if (durNs < 0) {
            throw new IllegalArgumentException("negative duration " + durNs + " for " + name);
        }
    }

    /** An event without graph id (every source but Nsight kernels). */
    public TraceEvent(
            Kind kind,
            String name,
            long startNs,
            long durNs,
            Integer device,
            Long stream,
            Long correlation,
            Long externalId,
            String inputDims) {
        this(kind, name, startNs, durNs, device, stream, correlation, externalId, inputDims, null);
    }

    public long endNs() {
        return startNs + durNs;
    }

    public static TraceEvent kernel(String name, long startNs, long durNs, int device, long stream) {
        return new TraceEvent(Kind.KERNEL, name, startNs, durNs, device, stream, null, null, null);
    }
}
