package io.llmprof.streams.host;

import io.llmprof.events.PassRecord;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.TraceEvent.Kind;
import io.llmprof.events.host.HostStep;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/** Hand-built trace events for the host tests; times are given in µs and stored in ns. */
final class Ev {
    static final int DEVICE = 0;
    static final long STREAM = 7;

    private Ev() {}

    static long us(double v) {
        return Math.round(v * 1000);
    }

    static TraceEvent kernel(String name, double startUs, double durUs) {
        return new TraceEvent(Kind.KERNEL, name, us(startUs), us(durUs), DEVICE, STREAM, null, null, null);
    }

    static TraceEvent kernel(String name, double startUs, double durUs, long corr) {
        return new TraceEvent(Kind.KERNEL, name, us(startUs), us(durUs), DEVICE, STREAM, corr, null, null);
    }

    static TraceEvent kernelOn(long stream, String name, double startUs, double durUs, Long corr) {
        return new TraceEvent(Kind.KERNEL, name, us(startUs), us(durUs), DEVICE, stream, corr, null, null);
    }

    static TraceEvent graphKernel(String name, double startUs, double durUs, long graphId) {
        return new TraceEvent(Kind.KERNEL, name, us(startUs), us(durUs), DEVICE, STREAM, null, null, null, graphId);
    }

    static TraceEvent memcpy(String name, double startUs, double durUs, long stream, Long corr) {
        return new TraceEvent(Kind.MEMCPY, name, us(startUs), us(durUs), DEVICE, stream, corr, null, null);
    }

    static TraceEvent api(String name, double startUs, double durUs, long corr) {
        return new TraceEvent(Kind.RUNTIME, name, us(startUs), us(durUs), null, 1L, corr, null, null);
    }

    static TraceEvent api(String name, double startUs, double durUs) {
        return new TraceEvent(Kind.RUNTIME, name, us(startUs), us(durUs), null, 1L, null, null, null);
    }

    static TraceEvent nvtx(String name, double startUs, double durUs) {
        return new TraceEvent(Kind.USER_ANNOTATION, name, us(startUs), us(durUs), null, 1L, null, null, null);
    }

    static TraceEvent cpuOp(String name, double startUs, double durUs) {
        return new TraceEvent(Kind.CPU_OP, name, us(startUs), us(durUs), null, 1L, null, null, null);
    }

    static TraceEvent gpuAnnotation(String name, double startUs, double durUs) {
        return new TraceEvent(Kind.GPU_ANNOTATION, name, us(startUs), us(durUs), DEVICE, STREAM, null, null, null);
    }

    static Lane laneOf(TraceEvent e) {
        return e.kind().isGpuActivity() || e.kind() == Kind.GPU_ANNOTATION ? Lane.GPU : Lane.HOST;
    }

    /** How the two lanes are delivered relative to each other (each lane stays in start order). */
    enum Order {
        GPU_FIRST,
        HOST_FIRST,
        INTERLEAVED
    }

    /** The events of both lanes, each lane sorted by start, merged as {@code order} says. */
    static List<TraceEvent> arrange(List<TraceEvent> events, Order order) {
        List<TraceEvent> gpu = new ArrayList<>();
        List<TraceEvent> host = new ArrayList<>();
        for (TraceEvent e : events) {
            (laneOf(e) == Lane.GPU ? gpu : host).add(e);
        }
        gpu.sort(Comparator.comparingLong(TraceEvent::startNs));
        host.sort(Comparator.comparingLong(TraceEvent::startNs));
        List<TraceEvent> out = new ArrayList<>();
        switch (order) {
            case GPU_FIRST -> {
                out.addAll(gpu);
                out.addAll(host);
            }
            case HOST_FIRST -> {
                out.addAll(host);
                out.addAll(gpu);
            }
            case INTERLEAVED -> {
                out.addAll(gpu);
                out.addAll(host);
                out.sort(Comparator.comparingLong(TraceEvent::startNs)); // stable: ties keep lane order
            }
        }
        return out;
    }

    /** Feeds {@code events} (already arranged) to a fresh tracker, finishes it, returns its steps. */
    static List<HostStep> run(HostConfig config, List<TraceEvent> events) {
        HostTracker t = new HostTracker(config, "job", "run", "r0");
        List<HostStep> out = new ArrayList<>();
        for (TraceEvent e : events) {
            t.accept(laneOf(e), e, out::add);
        }
        t.finish(out::add);
        return out;
    }

    static List<HostStep> run(HostConfig config, List<TraceEvent> events, Order order) {
        return run(config, arrange(events, order));
    }

    static PassRecord pass(long index, double startUs, double endUs, String phase, boolean complete) {
        return new PassRecord(
                "job",
                "run",
                "r0",
                "generic",
                "anchor",
                4,
                1,
                index,
                us(startUs),
                us(endUs),
                us(endUs - startUs),
                0,
                0,
                10,
                complete,
                false,
                null,
                null,
                4,
                complete ? "next_pass" : "resync",
                List.of(),
                phase,
                null,
                null,
                null,
                PassRecord.BOUNDARY_ANCHOR,
                0L);
    }
}
