package io.llmprof.agent.cli;

import io.llmprof.agent.kineto.ReadSummary;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.nsys.NsysReader;
import io.llmprof.agent.produce.TraceBatcher;
import io.llmprof.agent.produce.TraceReaders;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.apache.kafka.common.serialization.Serializer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code agent bench FILE...}: parse, sequence, batch and encode without Kafka, as {@code agent replay} does before it
 * produces; prints the rate. This is how the team measures the agent's read and ship path on one core (issue 15,
 * item 4) for Kineto JSON and Nsight SQLite exports.
 */
@Command(
        name = "bench",
        mixinStandardHelpOptions = true,
        description = "Parse + sequence + batch + encode trace files as the agent ships them (no Kafka) and print"
                + " MB/s, events/s, encoded bytes per event and peak heap.")
public final class BenchCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(
            arity = "1..*",
            paramLabel = "FILE",
            description = "Kineto traces (.json or .json.gz) or Nsight Systems SQLite exports (.sqlite).")
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

    @Option(
            names = "--no-encode",
            description = "Leave the batches unencoded: parse, sequence and batch only (the figures before"
                    + " the binary wire format).")
    boolean noEncode;

    public BenchCommand() {}

    /**
     * One measured read.
     *
     * @param seconds wall time
     * @param encodedBytes the batches' bytes on the wire (before the producer's compression); -1 when not encoded
     * @param cpuSeconds CPU time of the reading thread (parse, gunzip, sequence, batch, encode; not GC threads): on a
     *     shared machine this is the figure that does not depend on the neighbours' load
     */
    public record Measurement(
            Path file,
            ReadSummary summary,
            long batches,
            long encodedBytes,
            double seconds,
            double cpuSeconds,
            long peakHeapBytes) {
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
                measure(file, options, batchSize, !noEncode);
            }
            for (int i = 0; i < repeat; i++) {
                Measurement m = measure(file, options, batchSize, !noEncode);
                out.println(format(m));
                out.flush();
            }
        }
        return 0;
    }

    public static Measurement measure(Path file, ReaderOptions options, int batchSize, boolean encode)
            throws Exception {
        List<MemoryPoolMXBean> heapPools = ManagementFactory.getMemoryPoolMXBeans().stream()
                .filter(p -> p.getType() == MemoryType.HEAP)
                .toList();
        System.gc();
        heapPools.forEach(MemoryPoolMXBean::resetPeakUsage);
        long[] batches = {0, encode ? 0 : -1};
        Serializer<TraceBatch> encoder = Topics.TRACE_EVENTS.valueSerde().serializer();
        TraceBatcher batcher = new TraceBatcher(
                TraceFiles.jobName(file),
                TraceFiles.runName(file),
                file.toString(),
                batchSize,
                TraceBatcher.DEFAULT_MAX_BATCH_BYTES,
                b -> {
                    batches[0]++;
                    if (encode) {
                        batches[1] += encoder.serialize(Topics.TRACE_EVENTS.name(), b).length;
                    }
                },
                p -> {});
        java.lang.management.ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long cpu0 = threads.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        ReadSummary summary = TraceReaders.read(file, options, batcher);
        double seconds = (System.nanoTime() - t0) / 1e9;
        double cpuSeconds = (threads.getCurrentThreadCpuTime() - cpu0) / 1e9;
        long peak =
                heapPools.stream().mapToLong(p -> p.getPeakUsage().getUsed()).sum();
        return new Measurement(file, summary, batches[0], batches[1], seconds, cpuSeconds, peak);
    }

    static String format(Measurement m) {
        ReadSummary s = m.summary();
        // An SQLite export is read as it is on disk: only JSON has a decompressed size of its own to report.
        boolean json = !NsysReader.isSqlite(m.file());
        String encoded = m.encodedBytes() < 0
                ? "not encoded"
                : String.format(
                        Locale.ROOT,
                        "encoded %.1f B/event",
                        s.eventsRead() == 0 ? 0.0 : (double) m.encodedBytes() / s.eventsRead());
        String rates = json
                ? String.format(
                        Locale.ROOT,
                        "%.2f MB in (%.2f MB JSON) in %.3f s = %.1f MB/s in, %.1f MB/s JSON, %,.0f events/s;"
                                + " thread CPU %.3f s = %.1f MB/s JSON per CPU-second",
                        s.bytesRead() / 1e6,
                        s.decompressedBytes() / 1e6,
                        m.seconds(),
                        m.inputMbPerSecond(),
                        m.decompressedMbPerSecond(),
                        m.eventsPerSecond(),
                        m.cpuSeconds(),
                        m.decompressedMbPerCpuSecond())
                : String.format(
                        Locale.ROOT,
                        "%.2f MB SQLite in %.3f s = %.1f MB/s, %,.0f events/s; thread CPU %.3f s = %,.0f events"
                                + " per CPU-second",
                        s.bytesRead() / 1e6,
                        m.seconds(),
                        m.inputMbPerSecond(),
                        m.eventsPerSecond(),
                        m.cpuSeconds(),
                        m.cpuSeconds() == 0 ? 0.0 : s.eventsRead() / m.cpuSeconds());
        return String.format(
                Locale.ROOT,
                "%s: %s; %,d events (%,d kernels, %,d skipped), %,d batches, %s, ranks %s, %d problems;"
                        + " peak heap %.1f MB",
                m.file().getFileName(),
                rates,
                s.eventsRead(),
                s.kernels(),
                s.skipped(),
                m.batches(),
                encoded,
                s.ranks(),
                s.problemsTotal(),
                m.peakHeapBytes() / 1e6);
    }
}
