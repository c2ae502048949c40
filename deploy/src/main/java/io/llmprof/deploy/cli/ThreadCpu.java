package io.llmprof.deploy.cli;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * CPU time of the JVM's threads over one part of a bench, by role (stream thread, its producers' I/O, broker,
 * dashboard, agent): where the seconds of a stage went when everything shares one process and two cores. Threads
 * that ended during the part (the agent's file readers) are not listed; the process total is printed beside, with the
 * CPU of the JVM's own JIT compiler and GC threads ({@link JvmThreads}: on Linux, from /proc; the management beans
 * do not list them) and what remains: threads that ended and the VM's other threads.
 */
final class ThreadCpu {
    /** Roles, first match wins; the rest is "other". */
    private static final List<Map.Entry<String, String>> ROLES = List.of(
            Map.entry("kafka-producer-network-thread | llmprof-streams", "streams: producer I/O"),
            Map.entry("StreamThread", "streams: stream thread"),
            Map.entry("llmprof-streams", "streams: other"),
            Map.entry("llmprof-dashboard", "dashboard"),
            Map.entry("Jetty", "dashboard"),
            Map.entry("kafka-producer-network-thread | llmprof-agent", "agent"),
            Map.entry("kineto-reader", "agent"),
            Map.entry("llmprof-replay", "agent"),
            Map.entry("main", "agent (bench main)"),
            Map.entry("llmprof-bench", "bench load and sampler"),
            Map.entry("HttpClient", "bench load and sampler"),
            Map.entry("data-plane-kafka", "broker"),
            Map.entry("group-coordinator", "broker"),
            Map.entry("TxnMarkerSender", "broker"),
            Map.entry("AddPartitionsToTxn", "broker"),
            Map.entry("transaction", "broker"),
            Map.entry("kafka-", "broker"),
            Map.entry("quorum", "broker"),
            Map.entry("broker", "broker"),
            Map.entry("controller", "broker"),
            Map.entry("ExpirationReaper", "broker"),
            Map.entry("log-", "broker"));

    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    private final Map<Long, Long> start = new HashMap<>();
    private final long startProcessNs;
    private final long startWallNs;
    private final long startJitMs;
    private final long startGcMs;
    private final JvmThreads.Snapshot startJvm;

    private ThreadCpu() {
        startProcessNs = processCpuNs();
        startWallNs = System.nanoTime();
        startJitMs = jitMs();
        startGcMs = gcMs();
        startJvm = JvmThreads.snapshot();
        for (long id : threads.getAllThreadIds()) {
            long cpu = threads.getThreadCpuTime(id);
            if (cpu >= 0) {
                start.put(id, cpu);
            }
        }
    }

    /** Starts counting now. */
    static ThreadCpu start() {
        return new ThreadCpu();
    }

    static String role(String threadName) {
        for (Map.Entry<String, String> r : ROLES) {
            if (threadName.contains(r.getKey())) {
                return r.getValue();
            }
        }
        return "other";
    }

    /** CPU seconds per role since {@link #start()}, largest first. */
    Map<String, Double> byRole() {
        Map<String, Double> roles = new HashMap<>();
        for (long id : threads.getAllThreadIds()) {
            long cpu = threads.getThreadCpuTime(id);
            var info = threads.getThreadInfo(id);
            if (cpu < 0 || info == null) {
                continue;
            }
            long used = cpu - start.getOrDefault(id, 0L);
            roles.merge(role(info.getThreadName()), used / 1e9, Double::sum);
        }
        return roles.entrySet().stream()
                .sorted(Map.Entry.<String, Double>comparingByValue().reversed())
                .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue, (a, b) -> a, LinkedHashMap::new));
    }

    /**
     * Ends the part: reads the wall clock, each role's CPU, the process CPU and the JIT and GC threads once, so that
     * the round's line and its JIT share are of the same moment.
     */
    Usage stop() {
        double wall = (System.nanoTime() - startWallNs) / 1e9;
        Map<String, Double> roles = byRole();
        long process = processCpuNs();
        return new Usage(
                wall,
                roles,
                process < 0 ? Double.NaN : (process - startProcessNs) / 1e9,
                startJvm,
                JvmThreads.snapshot(),
                (jitMs() - startJitMs) / 1e3,
                (gcMs() - startGcMs) / 1e3);
    }

    /**
     * The CPU of one part, from {@link #start()} to {@link #stop()}.
     *
     * @param processSeconds NaN where the JVM cannot tell
     * @param startJvm the JIT and GC threads at the start
     * @param jvm the same at the stop
     * @param compileSeconds the JVM's elapsed compile time (shown where the threads' CPU is not readable)
     */
    record Usage(
            double wallSeconds,
            Map<String, Double> byRole,
            double processSeconds,
            JvmThreads.Snapshot startJvm,
            JvmThreads.Snapshot jvm,
            double compileSeconds,
            double gcPauseSeconds) {
        private boolean jvmReadable() {
            return jvm.readable() && startJvm.readable();
        }

        /** The JIT compiler threads' share of the process CPU, 0-1; NaN where their CPU is not readable (not Linux). */
        double jitShare() {
            if (!jvmReadable() || !(processSeconds > 0)) {
                return Double.NaN;
            }
            return jvm.since(startJvm).jitSeconds() / processSeconds;
        }

        /**
         * One line: wall seconds, process CPU seconds, each role's CPU seconds, then the JIT compiler and GC
         * threads' CPU where readable, else the JVM's elapsed compile time and GC pauses.
         */
        String line(String what) {
            String roles = byRole.entrySet().stream()
                    .filter(e -> e.getValue() >= 0.005)
                    .map(e -> String.format(Locale.ROOT, "%s %.2f", e.getKey(), e.getValue()))
                    .collect(Collectors.joining(", "));
            String vm;
            if (jvmReadable()) {
                JvmThreads.Cpu used = jvm.since(startJvm);
                double listed = byRole.values().stream()
                        .mapToDouble(Double::doubleValue)
                        .sum();
                vm = String.format(
                        Locale.ROOT,
                        "JIT threads %.2f s = %.0f %%, GC threads %.2f s, GC pauses %.2f s; threads that ended and the"
                                + " VM's others %.2f s",
                        used.jitSeconds(),
                        100 * used.jitSeconds() / processSeconds,
                        used.gcSeconds(),
                        gcPauseSeconds,
                        Math.max(0, processSeconds - listed - used.jitSeconds() - used.gcSeconds()));
            } else {
                vm = String.format(
                        Locale.ROOT,
                        "JIT compile time %.2f s (elapsed), GC pauses %.2f s",
                        compileSeconds,
                        gcPauseSeconds);
            }
            return String.format(
                    Locale.ROOT,
                    "  cpu during %s: %.2f s wall, process %.2f s (%s; %s)",
                    what,
                    wallSeconds,
                    processSeconds,
                    roles,
                    vm);
        }
    }

    private static long jitMs() {
        var jit = ManagementFactory.getCompilationMXBean();
        return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : 0;
    }

    private static long gcMs() {
        return ManagementFactory.getGarbageCollectorMXBeans().stream()
                .mapToLong(gc -> Math.max(0, gc.getCollectionTime()))
                .sum();
    }

    private static long processCpuNs() {
        return ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os
                ? os.getProcessCpuTime()
                : -1;
    }
}
