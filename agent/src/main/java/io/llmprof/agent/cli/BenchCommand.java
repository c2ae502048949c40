package io.llmprof.agent.cli;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.ReadSummary;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.nsys.NsysReader;
import io.llmprof.agent.produce.TraceBatcher;
import io.llmprof.agent.produce.TraceReaders;
import io.llmprof.agent.service.ServiceReaders;
import io.llmprof.agent.service.ServiceShipper;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.apache.kafka.common.serialization.Serializer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code agent bench FILE...}: parse, sequence, batch and encode without Kafka, as {@code agent replay} does before it
 * produces; prints the rate. This is how the team measures the agent's read and ship path on one core (issue 15,
 * item 4) for Kineto JSON, Nsight SQLite exports and the service formats ({@code agent service}'s inputs, read,
 * batched and encoded as {@link ServiceShipper} ships them).
 */
@Command(
        name = "bench",
        mixinStandardHelpOptions = true,
        description = "Parse + sequence + batch + encode trace files or service events as the agent ships them (no"
                + " Kafka) and print MB/s, events/s, encoded bytes per event and peak heap.")
public final class BenchCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(
            arity = "1..*",
            paramLabel = "FILE",
            description = "Kineto traces (.json or .json.gz), Nsight Systems SQLite exports (.sqlite), or service"
                    + " events as `agent service` reads them: llmprof JSON lines (.jsonl, .jsonl.gz), ms_service_*.db"
                    + " or a directory of them (chrome_tracing.json with --service).")
    List<Path> files;

    @Option(
            names = "--service",
            description = "Read every FILE as service events (`agent service --input`), whatever its name; without it,"
                    + " .jsonl, .jsonl.gz, ms_service_*.db and directories are, and everything else is a trace.")
    boolean service;

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

    @Mixin
    ReadOrderOptions order = new ReadOrderOptions();

    @Option(
            names = "--batch-size",
            description = "Events per batch (default: " + TraceBatcher.DEFAULT_BATCH_EVENTS + " for traces, "
                    + ServiceShipper.DEFAULT_BATCH_SIZE + " for service events, as the agent ships them).")
    Integer batchSize;

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

    /** Problems of a service input printed at most (the rest are counted). */
    static final int PROBLEMS_SHOWN = 20;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        int bad = 0;
        ReaderOptions options = order.readerOptions(spec.commandLine());
        for (Path file : files) {
            boolean asService = service || isServiceInput(file);
            int size = batchSize != null
                    ? batchSize
                    : asService ? ServiceShipper.DEFAULT_BATCH_SIZE : TraceBatcher.DEFAULT_BATCH_EVENTS;
            long problems = 0;
            for (int i = 0; i < warmup + repeat; i++) {
                String line;
                if (asService) {
                    // The trace readers log their problems; the service readers hand them over: the first read's
                    // are printed, as many as a screen holds.
                    Consumer<InputProblem> shown =
                            i == 0 ? problemPrinter(spec.commandLine().getErr()) : p -> {};
                    ServiceMeasurement m = measureService(file, size, !noEncode, shown);
                    problems = m.summary().problems();
                    line = format(m);
                } else {
                    Measurement m = measure(file, options, size, !noEncode);
                    problems = m.summary().problemsTotal();
                    line = format(m);
                }
                if (i >= warmup) {
                    out.println(line);
                    out.flush();
                }
            }
            if (problems > 0) {
                bad++;
                spec.commandLine()
                        .getErr()
                        .println("agent bench: " + file + ": " + problems + " problem(s) in the input (the warnings"
                                + " above say where); its figures are for what could be read");
            }
        }
        return bad == 0 ? 0 : 1;
    }

    /** Whether {@code file} is read as service events without {@code --service}: see the option. */
    static boolean isServiceInput(Path file) {
        String name =
                file.getFileName() == null ? "" : file.getFileName().toString().toLowerCase(Locale.ROOT);
        return Files.isDirectory(file)
                || name.endsWith(".jsonl")
                || name.endsWith(".jsonl.gz")
                || ServiceReaders.DB_NAME.matcher(name).matches();
    }

    /**
     * One measured read of service events.
     *
     * @param inputBytes the input's size on disk (a directory's: its databases')
     * @param encodedBytes as {@link Measurement#encodedBytes}
     * @param allocatedBytes what the reading thread allocated (exact, where the JVM counts it; else -1)
     * @param digest the events' digest, which {@code agent service} computes per event for its checkpoint
     */
    public record ServiceMeasurement(
            Path file,
            ServiceReaders.Summary summary,
            long inputBytes,
            long batches,
            long encodedBytes,
            double seconds,
            double cpuSeconds,
            long peakHeapBytes,
            long allocatedBytes,
            long digest) {}

    /**
     * Reads {@code input} as {@code agent service} does ({@link ServiceReaders}), with its per-event checkpoint digest,
     * cuts batches of {@code batchSize} events into the records {@link ServiceShipper} sends, and encodes each with the
     * topic's serializer.
     */
    public static ServiceMeasurement measureService(Path input, int batchSize, boolean encode) throws Exception {
        return measureService(input, batchSize, encode, p -> {});
    }

    /** Problems printed one line each ({@code KIND file: line N: what}), the first {@value #PROBLEMS_SHOWN}. */
    static Consumer<InputProblem> problemPrinter(PrintWriter err) {
        long[] seen = {0};
        return p -> {
            if (seen[0]++ < PROBLEMS_SHOWN) {
                err.println("agent bench: " + p.kind() + " " + p.file() + ": " + p.message());
            } else if (seen[0] == PROBLEMS_SHOWN + 1) {
                err.println("agent bench: " + p.file() + ": more problems, not shown (the count follows)");
            }
            err.flush();
        };
    }

    /** As {@link #measureService(Path, int, boolean)}, the input's problems handed to {@code problems}. */
    public static ServiceMeasurement measureService(
            Path input, int batchSize, boolean encode, Consumer<InputProblem> problems) throws Exception {
        List<MemoryPoolMXBean> heapPools = heapPools();
        String job = ServiceReaders.defaultJob(input);
        String instance = ServiceReaders.defaultInstance(input);
        String source = input.toString();
        Serializer<ServiceBatch> encoder = Topics.SERVICE_EVENTS.valueSerde().serializer();
        List<ServiceEvent> pending = new ArrayList<>(batchSize);
        long[] counts = {0, 0, encode ? 0 : -1}; // events shipped, batches, bytes
        BiConsumer<List<ServiceEvent>, Boolean> ship = (events, end) -> {
            ServiceBatch b = ServiceShipper.batch(job, instance, source, counts[0], events, end);
            counts[0] += events.size();
            counts[1]++;
            if (encode) {
                counts[2] += encoder.serialize(Topics.SERVICE_EVENTS.name(), b).length;
            }
        };
        java.lang.management.ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long allocated0 = allocatedBytes(threads);
        long cpu0 = threads.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        ServiceShipper.Read read =
                ServiceShipper.readInto(input, pending, batchSize, full -> ship.accept(full, false), problems);
        ServiceReaders.Summary summary = read.summary();
        ship.accept(pending, true); // the last batch, as the shipper sends it (end of stream, maybe empty)
        double seconds = (System.nanoTime() - t0) / 1e9;
        double cpuSeconds = (threads.getCurrentThreadCpuTime() - cpu0) / 1e9;
        long allocated = allocated0 < 0 ? -1 : allocatedBytes(threads) - allocated0;
        long peak =
                heapPools.stream().mapToLong(p -> p.getPeakUsage().getUsed()).sum();
        long bytes = 0;
        for (Path f : Files.isDirectory(input) ? ServiceReaders.databases(input) : List.of(input)) {
            bytes += Files.size(f);
        }
        return new ServiceMeasurement(
                input, summary, bytes, counts[1], counts[2], seconds, cpuSeconds, peak, allocated, read.digest());
    }

    /** The bytes this thread allocated so far, or -1 where the JVM does not count them. */
    private static long allocatedBytes(java.lang.management.ThreadMXBean threads) {
        return threads instanceof com.sun.management.ThreadMXBean counted && counted.isThreadAllocatedMemoryEnabled()
                ? counted.getCurrentThreadAllocatedBytes()
                : -1;
    }

    /** The heap pools, their peaks reset after a collection: what a measurement's peak heap is read from. */
    private static List<MemoryPoolMXBean> heapPools() {
        List<MemoryPoolMXBean> heapPools = ManagementFactory.getMemoryPoolMXBeans().stream()
                .filter(p -> p.getType() == MemoryType.HEAP)
                .toList();
        System.gc();
        heapPools.forEach(MemoryPoolMXBean::resetPeakUsage);
        return heapPools;
    }

    static String format(ServiceMeasurement m) {
        ServiceReaders.Summary s = m.summary();
        return String.format(
                Locale.ROOT,
                "%s: service events (%s), %.2f MB in %.3f s = %.1f MB/s, %,.0f events/s; thread CPU %.3f s = %,.0f"
                        + " events per CPU-second; %,d events, %,d batches, %s, %d problems; peak heap %.1f MB;"
                        + " allocated %s",
                m.file().getFileName(),
                s.format(),
                m.inputBytes() / 1e6,
                m.seconds(),
                m.inputBytes() / 1e6 / m.seconds(),
                s.events() / m.seconds(),
                m.cpuSeconds(),
                m.cpuSeconds() == 0 ? 0.0 : s.events() / m.cpuSeconds(),
                s.events(),
                m.batches(),
                m.encodedBytes() < 0
                        ? "not encoded"
                        : String.format(
                                Locale.ROOT,
                                "encoded %.1f B/event",
                                s.events() == 0 ? 0.0 : (double) m.encodedBytes() / s.events()),
                s.problems(),
                m.peakHeapBytes() / 1e6,
                m.allocatedBytes() < 0 || s.events() == 0
                        ? "not counted"
                        : String.format(Locale.ROOT, "%.0f B/event", (double) m.allocatedBytes() / s.events()));
    }

    public static Measurement measure(Path file, ReaderOptions options, int batchSize, boolean encode)
            throws Exception {
        List<MemoryPoolMXBean> heapPools = heapPools();
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
