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

    /** Process CPU seconds since {@link #start()} (NaN where the JVM cannot tell). */
    double processSeconds() {
        long process = processCpuNs();
        return process < 0 ? Double.NaN : (process - startProcessNs) / 1e9;
    }

    /**
     * The JIT compiler threads' share of the process CPU since {@link #start()}, 0-1; NaN where their CPU is not
     * readable (not Linux).
     */
    double jitShare() {
        JvmThreads.Snapshot now = JvmThreads.snapshot();
        double process = processSeconds();
        if (!now.readable() || !startJvm.readable() || !(process > 0)) {
            return Double.NaN;
        }
        return now.since(startJvm).jitSeconds() / process;
    }

    /**
     * One line: wall seconds, process CPU seconds, each role's CPU seconds, then the JIT compiler and GC threads'
     * CPU where readable, else the JVM's elapsed compile time and GC pauses.
     */
    String line(String what) {
        double wall = (System.nanoTime() - startWallNs) / 1e9;
        Map<String, Double> byRole = byRole();
        String roles = byRole.entrySet().stream()
                .filter(e -> e.getValue() >= 0.005)
                .map(e -> String.format(Locale.ROOT, "%s %.2f", e.getKey(), e.getValue()))
                .collect(Collectors.joining(", "));
        JvmThreads.Snapshot now = JvmThreads.snapshot();
        double process = processSeconds();
        String jvm;
        if (now.readable() && startJvm.readable()) {
            JvmThreads.Cpu used = now.since(startJvm);
            double listed =
                    byRole.values().stream().mapToDouble(Double::doubleValue).sum();
            jvm = String.format(
                    Locale.ROOT,
                    "JIT threads %.2f s = %.0f %%, GC threads %.2f s, GC pauses %.2f s; threads that ended and the"
                            + " VM's others %.2f s",
                    used.jitSeconds(),
                    100 * used.jitSeconds() / process,
                    used.gcSeconds(),
                    (gcMs() - startGcMs) / 1e3,
                    Math.max(0, process - listed - used.jitSeconds() - used.gcSeconds()));
        } else {
            jvm = String.format(
                    Locale.ROOT,
                    "JIT compile time %.2f s (elapsed), GC pauses %.2f s",
                    (jitMs() - startJitMs) / 1e3,
                    (gcMs() - startGcMs) / 1e3);
        }
        return String.format(
                Locale.ROOT, "  cpu during %s: %.2f s wall, process %.2f s (%s; %s)", what, wall, process, roles, jvm);
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
