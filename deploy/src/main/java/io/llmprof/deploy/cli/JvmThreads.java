package io.llmprof.deploy.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * CPU of the JVM's own JIT compiler and GC threads, read from /proc/self/task on Linux. The management beans do not
 * list these threads, and {@code CompilationMXBean.getTotalCompilationTime} is the compiles' elapsed time, which on a
 * busy two-core box counts the seconds a compiler thread waited for a core as well. Elsewhere nothing is readable and
 * the caller says so.
 */
final class JvmThreads {
    private static final Path TASKS = Path.of("/proc/self/task");
    /** USER_HZ: the unit of utime and stime in /proc stat files; 100 on every Linux build the JDK runs on. */
    private static final double TICKS_PER_SECOND = 100;

    private JvmThreads() {}

    /** What a thread does for the JVM, from its name (/proc shows the first 15 characters). */
    enum Kind {
        JIT,
        GC,
        OTHER
    }

    static Kind kind(String comm) {
        if (comm.startsWith("C1 CompilerThre") || comm.startsWith("C2 CompilerThre")) {
            return Kind.JIT;
        }
        if (comm.startsWith("GC Thread") || comm.startsWith("G1 ") || comm.startsWith("VM Thread")) {
            return Kind.GC;
        }
        return Kind.OTHER;
    }

    /** CPU seconds of the JIT and GC threads. */
    record Cpu(double jitSeconds, double gcSeconds) {}

    /** Each live thread's kind and CPU ticks at one moment; {@code readable} false where /proc is not there. */
    record Snapshot(boolean readable, Map<Long, Kind> kinds, Map<Long, Long> ticks) {
        /**
         * The JIT and GC threads' CPU since {@code earlier}. A thread that started later counts from zero; one that
         * ended in between is lost (C2 threads come and go under UseDynamicNumberOfCompilerThreads, a small
         * undercount).
         */
        Cpu since(Snapshot earlier) {
            double jit = 0;
            double gc = 0;
            for (Map.Entry<Long, Long> e : ticks.entrySet()) {
                double seconds = (e.getValue() - earlier.ticks.getOrDefault(e.getKey(), 0L)) / TICKS_PER_SECOND;
                switch (kinds.get(e.getKey())) {
                    case JIT -> jit += seconds;
                    case GC -> gc += seconds;
                    default -> {}
                }
            }
            return new Cpu(jit, gc);
        }
    }

    static Snapshot snapshot() {
        return snapshot(TASKS);
    }

    /** Reads every task under {@code tasks} (a /proc/PID/task directory); unreadable tasks are skipped. */
    static Snapshot snapshot(Path tasks) {
        Map<Long, Kind> kinds = new HashMap<>();
        Map<Long, Long> ticks = new HashMap<>();
        if (!Files.isDirectory(tasks)) {
            return new Snapshot(false, kinds, ticks);
        }
        try (DirectoryStream<Path> dir = Files.newDirectoryStream(tasks)) {
            for (Path task : dir) {
                try {
                    long tid = Long.parseLong(task.getFileName().toString());
                    String stat = Files.readString(task.resolve("stat"), StandardCharsets.US_ASCII);
                    long[] nameAndTicks = parseStat(stat);
                    if (nameAndTicks == null) {
                        continue;
                    }
                    String comm = stat.substring((int) nameAndTicks[0], (int) nameAndTicks[1]);
                    kinds.put(tid, kind(comm));
                    ticks.put(tid, nameAndTicks[2]);
                } catch (IOException | RuntimeException gone) {
                    // The thread ended between the listing and the read, or the name was not a number: skip it.
                }
            }
        } catch (IOException e) {
            return new Snapshot(false, kinds, ticks);
        }
        return new Snapshot(true, kinds, ticks);
    }

    /**
     * From a /proc stat line ({@code tid (comm) state ppid ... utime stime ...}): {start of comm, end of comm,
     * utime + stime}, or null if the line is not of that shape. The name may hold spaces and parentheses, so the
     * fields are counted from the last ')'.
     */
    static long[] parseStat(String stat) {
        int open = stat.indexOf('(');
        int close = stat.lastIndexOf(')');
        if (open < 0 || close < open) {
            return null;
        }
        String[] fields = stat.substring(close + 1).trim().split(" +");
        // fields[0] is the state (field 3 of stat); utime and stime are fields 14 and 15.
        if (fields.length < 13) {
            return null;
        }
        return new long[] {open + 1, close, Long.parseLong(fields[11]) + Long.parseLong(fields[12])};
    }
}
