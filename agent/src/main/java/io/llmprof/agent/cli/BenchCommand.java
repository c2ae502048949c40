package io.llmprof.agent.cli;

import io.llmprof.agent.kineto.ReadSummary;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.produce.TraceBatcher;
import io.llmprof.agent.produce.TraceReaders;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code agent bench FILE...}: parse, sequence and batch without Kafka; prints the parse rate. This is how the
 * team measures the reader.
 */
@Command(
        name = "bench",
        mixinStandardHelpOptions = true,
        description = "Parse + sequence + batch trace files (no Kafka) and print MB/s, events/s and peak heap.")
public final class BenchCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(arity = "1..*", paramLabel = "FILE", description = "Kineto trace files (.json or .json.gz).")
    List<Path> files;

    @Option(
            names = "--warmup",
            defaultValue = "0",
            description = "Unmeasured reads of each file first, to warm the JIT (default: ${DEFAULT-VALUE}).")
    int warmup;

    @Option(
            names = "--repeat",
            defaultValue = "1",
            description = "Measured reads of each file (default: ${DEFAULT-VALUE}).")
    int repeat;

    @Option(
            names = "--reorder-window",
            defaultValue = "65536",
            description = "Events buffered per (rank, lane) (default: ${DEFAULT-VALUE}).")
    int reorderWindow;

    @Option(
            names = "--batch-size",
            defaultValue = "" + TraceBatcher.DEFAULT_BATCH_EVENTS,
            description = "Events per batch (default: ${DEFAULT-VALUE}).")
    int batchSize;

    public BenchCommand() {}

    /**
     * One measured read.
     *
     * @param seconds wall time
     * @param cpuSeconds CPU time of the reading thread (parse, gunzip, sequence, batch; not GC threads): on a
     *     shared machine this is the figure that does not depend on the neighbours' load
     */
    public record Measurement(
            Path file, ReadSummary summary, long batches, double seconds, double cpuSeconds, long peakHeapBytes) {
        public double inputMbPerSecond() {
            return summary.bytesRead() / 1e6 / seconds;
        }

        public double decompressedMbPerSecond() {
            return summary.decompressedBytes() / 1e6 / seconds;
        }

        public double decompressedMbPerCpuSecond() {
            return summary.decompressedBytes() / 1e6 / cpuSeconds;
        }

        public double eventsPerSecond() {
            return summary.eventsRead() / seconds;
        }
    }

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        ReaderOptions options = ReaderOptions.defaults().withReorderWindow(reorderWindow);
        for (Path file : files) {
            for (int i = 0; i < warmup; i++) {
                measure(file, options, batchSize);
            }
            for (int i = 0; i < repeat; i++) {
                Measurement m = measure(file, options, batchSize);
                out.println(format(m));
                out.flush();
            }
        }
        return 0;
    }

    public static Measurement measure(Path file, ReaderOptions options, int batchSize) throws Exception {
        List<MemoryPoolMXBean> heapPools = ManagementFactory.getMemoryPoolMXBeans().stream()
                .filter(p -> p.getType() == MemoryType.HEAP)
                .toList();
        System.gc();
        heapPools.forEach(MemoryPoolMXBean::resetPeakUsage);
        long[] batches = {0};
        TraceBatcher batcher = new TraceBatcher(
                TraceFiles.jobName(file),
                TraceFiles.runName(file),
                file.toString(),
                batchSize,
                TraceBatcher.DEFAULT_MAX_BATCH_BYTES,
                b -> batches[0]++,
                p -> {});
        java.lang.management.ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long cpu0 = threads.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        ReadSummary summary = TraceReaders.read(file, options, batcher);
        double seconds = (System.nanoTime() - t0) / 1e9;
        double cpuSeconds = (threads.getCurrentThreadCpuTime() - cpu0) / 1e9;
        long peak =
                heapPools.stream().mapToLong(p -> p.getPeakUsage().getUsed()).sum();
        return new Measurement(file, summary, batches[0], seconds, cpuSeconds, peak);
    }

    static String format(Measurement m) {
        ReadSummary s = m.summary();
        return String.format(
                Locale.ROOT,
                "%s: %.2f MB in (%.2f MB JSON) in %.3f s = %.1f MB/s in, %.1f MB/s JSON, %,.0f events/s;"
                        + " thread CPU %.3f s = %.1f MB/s JSON per CPU-second;"
                        + " %,d events (%,d kernels, %,d skipped), %,d batches, ranks %s, %d problems;"
                        + " peak heap %.1f MB",
                m.file().getFileName(),
                s.bytesRead() / 1e6,
                s.decompressedBytes() / 1e6,
                m.seconds(),
                m.inputMbPerSecond(),
                m.decompressedMbPerSecond(),
                m.eventsPerSecond(),
                m.cpuSeconds(),
                m.decompressedMbPerCpuSecond(),
                s.eventsRead(),
                s.kernels(),
                s.skipped(),
                m.batches(),
                s.ranks(),
                s.problemsTotal(),
                m.peakHeapBytes() / 1e6);
    }
}
