package io.llmprof.streams.bench;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * {@link StreamsBenchmark#topology} timed by the thread's CPU time instead of the wall clock: on a 2-core box
 * shared with other builds (load 6-8), JMH's wall-clock scores of the same code spread over 2x between runs, while
 * the CPU time the stream thread spends is what a change to the processing path moves. Prints events/s per CPU
 * second, per wall second, and the GC time. Arguments: warm-up invocations, timed invocations (default 8 15).
 * How to run: docs/benchmarks.md.
 */
public final class TopologyCpuTime {
    private TopologyCpuTime() {}

    public static void main(String[] args) throws Exception {
        int warm = args.length > 0 ? Integer.parseInt(args[0]) : 8;
        int timed = args.length > 1 ? Integer.parseInt(args[1]) : 15;
        StreamsBenchmark b = new StreamsBenchmark();
        b.modelConfig = "deploy/src/main/resources/io/llmprof/deploy/demo-model.json";
        b.setUp();
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long cpuNs = 0;
        long wallNs = 0;
        long gcMs = 0;
        for (int i = 0; i < warm + timed; i++) {
            b.newDriver();
            if (i == warm) {
                gcMs = -gcMillis();
            }
            long cpu0 = threads.getCurrentThreadCpuTime();
            long wall0 = System.nanoTime();
            b.topology();
            long cpu1 = threads.getCurrentThreadCpuTime();
            long wall1 = System.nanoTime();
            b.closeDriver();
            if (i >= warm) {
                cpuNs += cpu1 - cpu0;
                wallNs += wall1 - wall0;
            }
        }
        gcMs += gcMillis();
        b.tearDown();
        double events = (double) StreamsBenchmark.EVENTS * timed;
        System.out.printf(
                "topology: %.0f events per CPU second of the stream thread, %.0f per wall second, GC %d ms"
                        + " (%d timed invocations after %d warm-up)%n",
                events / (cpuNs / 1e9), events / (wallNs / 1e9), gcMs, timed, warm);
    }

    private static long gcMillis() {
        long ms = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            ms += gc.getCollectionTime();
        }
        return ms;
    }
}
