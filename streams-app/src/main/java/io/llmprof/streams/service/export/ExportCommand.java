package io.llmprof.streams.service.export;

import io.llmprof.agent.service.ServiceReaders;
import io.llmprof.events.KafkaConnection;
import io.llmprof.events.RankKey;
import io.llmprof.events.Topics;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import io.llmprof.streams.cli.DurationConverter;
import io.llmprof.streams.offline.InputReport;
import io.llmprof.streams.service.MoeLayers;
import io.llmprof.streams.service.ServiceAnalyzer;
import io.llmprof.streams.service.ServiceConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code llmprof export}: msServiceProfiler's output files (request.csv, batch.csv, forward.csv, kvcache.csv,
 * request_status.csv, pd_split_*.csv, coordinator.csv, ep_balance.csv, moe_analysis.csv, profiler.db,
 * chrome_tracing.json and the ep_balance / moe_analysis charts) from raw service DBs, a chrome_tracing.json, JSON lines or a recorded {@code
 * llmprof.service-events} topic, computed by the same engine as the live topology, one analyzer per instance.
 * Columns and units: docs/export.md.
 */
@Command(
        name = "export",
        description = {
            "Export service-level profiles in msServiceProfiler's formats: request/batch/forward/kvcache/",
            "request_status/pd_split/coordinator/ep_balance/moe_analysis CSVs, profiler.db, chrome_tracing.json,",
            "ep_balance.png and moe_analysis.png. Input: ms_service_*.db files or a directory, chrome_tracing.json,",
            "llmprof JSON lines, or a recorded llmprof.service-events topic. Every column is in the unit its header",
            "says (docs/export.md)."
        },
        mixinStandardHelpOptions = true,
        sortOptions = false)
public final class ExportCommand implements Callable<Integer> {
    /** Analyzers are asked to time out stale requests every this many events (bounded memory on long inputs). */
    static final int EXPIRE_EVERY = 4096;

    private static final int KEPT_PROBLEMS = 20;

    @Spec
    CommandSpec spec;

    @Option(
            names = "--input",
            paramLabel = "PATH",
            description = "ms_service_*.db, a directory of them, chrome_tracing.json (.json/.json.gz) or llmprof"
                    + " JSON lines (.jsonl/.jsonl.gz).")
    Path input;

    @Option(
            names = "--topic",
            paramLabel = "TOPIC",
            description = "Read a recorded topic instead of --input (" + "llmprof.service-events" + "), from the"
                    + " beginning to its end offsets at start.")
    String topic;

    @Option(
            names = "--bootstrap-servers",
            paramLabel = "HOST:PORT",
            description =
                    "Kafka bootstrap servers for --topic (default: the --kafka-config file's" + " bootstrap.servers).")
    String bootstrapServers;

    @Option(
            names = "--kafka-config",
            paramLabel = "FILE",
            description = "Kafka client properties (security.protocol, ssl.*, sasl.*, ...) for --topic.")
    Path kafkaConfig;

    @Option(names = "--output", required = true, paramLabel = "DIR", description = "Output directory (created).")
    Path output;

    @Option(
            names = "--job",
            paramLabel = "NAME",
            description = "Job name of the exported rows (--input; default: the input's directory name), or only"
                    + " this job's instances (--topic).")
    String job;

    @Option(
            names = "--instance",
            paramLabel = "NAME",
            description =
                    "Instance name (--input; default: the input's file stem), or only this instance" + " (--topic).")
    String instance;

    @Option(
            names = "--model-config",
            paramLabel = "FILE",
            description = "The model's config.json: its MoE layer count numbers the EP-balance layers.")
    Path modelConfig;

    @Option(
            names = "--request-timeout",
            paramLabel = "DURATION",
            converter = DurationConverter.class,
            description = "A request with no event for this long (event time) is reported TIMED_OUT"
                    + " (default: ${DEFAULT-VALUE}).",
            defaultValue = "10m")
    Duration requestTimeout;

    public ExportCommand() {}

    @Override
    public Integer call() throws IOException {
        System.setProperty("java.awt.headless", "true");
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        String problem = checkOptions();
        if (problem != null) {
            err.println("export: " + problem);
            return 2;
        }
        ServiceConfig config;
        try {
            config = ServiceConfig.DEFAULTS.withRequestTimeout(requestTimeout);
        } catch (IllegalArgumentException e) {
            err.println("export: --request-timeout " + e.getMessage());
            return 2;
        }
        if (modelConfig != null) {
            int layers;
            try {
                layers = MoeLayers.fromConfig(modelConfig);
            } catch (Exception e) {
                err.println("export: cannot read --model-config " + modelConfig + ": " + e.getMessage());
                return 2;
            }
            if (layers > 0) {
                config = config.withMoeLayers(layers);
            } else {
                err.println("export: " + modelConfig + " describes a dense model (no MoE layers)");
            }
        }
        Files.createDirectories(output);
        // Written into a fresh directory beside the results and moved into place only once the export succeeded:
        // a failed or empty export leaves nothing half-written (a 0-byte profiler.db used to stay behind).
        Path staging = Files.createTempDirectory(output, ".export-");
        Run run = new Run(config);
        String source;
        boolean readToEnd = true;
        try {
            try (ExportSink sink = new ExportSink(staging)) {
                run.sink = sink;
                if (input != null) {
                    String read;
                    try {
                        read = readFiles(run, err);
                    } catch (IOException e) {
                        // e.g. a gzip stream that ends early: what was read is kept, the rest is lost
                        readToEnd = false;
                        err.println("export: " + input + " could be read only in part: "
                                + e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage()));
                        read = input + " (read in part, " + run.events + " events)";
                    }
                    source = read;
                } else {
                    source = readTopic(run, err);
                }
                if (run.events == 0) {
                    err.println("export: " + (input != null ? input : topic)
                            + " holds no usable service events: nothing written");
                    return InputReport.NO_DATA;
                }
                for (ServiceAnalyzer a : run.analyzers.values()) {
                    a.finish(sink);
                }
                sink.close();
                summary(out, err, sink, run, source);
            } catch (UncheckedIOException e) {
                err.println("export: " + e.getCause().getMessage());
                return 1;
            } catch (IllegalStateException e) {
                err.println("export: " + e.getMessage());
                return 1;
            }
            try (var written = Files.list(staging)) {
                for (Path f : written.toList()) {
                    Files.move(f, output.resolve(f.getFileName()), StandardCopyOption.REPLACE_EXISTING);
                }
            }
        } finally {
            deleteTree(staging);
        }
        return readToEnd && run.problems == 0 ? 0 : InputReport.PARTIAL;
    }

    private static void deleteTree(Path dir) {
        try (var all = Files.walk(dir)) {
            for (Path p : all.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            // a temporary directory left behind is reported, not fatal
            System.err.println("export: could not remove " + dir + ": " + e.getMessage());
        }
    }

    private String checkOptions() {
        if ((input == null) == (topic == null)) {
            return input == null
                    ? "give --input PATH (service DBs, chrome_tracing.json, JSON lines) or --topic "
                            + Topics.SERVICE_EVENTS.name() + " --bootstrap-servers HOST:PORT"
                    : "give either --input or --topic, not both";
        }
        if (input != null && !Files.exists(input)) {
            return "--input " + input + " does not exist";
        }
        if (topic != null && (bootstrapServers == null || bootstrapServers.isBlank()) && kafkaConfig == null) {
            return "--topic needs --bootstrap-servers HOST:PORT (or a --kafka-config file with bootstrap.servers)";
        }
        if (kafkaConfig != null && !Files.isRegularFile(kafkaConfig)) {
            return "--kafka-config " + kafkaConfig + " does not exist or is not a file";
        }
        if (modelConfig != null && !Files.isRegularFile(modelConfig)) {
            return "--model-config " + modelConfig + " does not exist or is not a file";
        }
        if (Files.exists(output) && !Files.isDirectory(output)) {
            return "--output " + output + " is a file, not a directory";
        }
        return null;
    }

    /** The analyzers of one export and what was fed to them. */
    private static final class Run {
        final ServiceConfig config;
        final Map<String, ServiceAnalyzer> analyzers = new LinkedHashMap<>();
        final Map<String, Long> sinceExpire = new HashMap<>();
        /** Next event index per (instance key, source): batches re-sent after a crash are not counted twice. */
        final Map<String, Long> nextIndex = new HashMap<>();

        ExportSink sink;
        long events;
        long problems;
        long duplicates;

        Run(ServiceConfig config) {
            this.config = config;
        }

        void accept(String job, String instance, ServiceEvent e) {
            String key = RankKey.of(job, instance);
            ServiceAnalyzer a = analyzers.computeIfAbsent(key, k -> new ServiceAnalyzer(job, instance, config));
            sink.event(job, instance, e);
            a.accept(e, sink);
            sink.handled();
            events++;
            long n = sinceExpire.merge(key, 1L, Long::sum);
            if (n >= EXPIRE_EVERY) {
                sinceExpire.put(key, 0L);
                a.expire(a.latestEventNs(), sink);
            }
        }
    }

    private String readFiles(Run run, PrintWriter err) throws IOException {
        Path abs = input.toAbsolutePath().normalize();
        String jobName = job != null ? job : defaultJob(abs);
        String instanceName = instance != null ? instance : stem(abs);
        ServiceReaders.Summary s = ServiceReaders.read(input, e -> run.accept(jobName, instanceName, e), p -> {
            run.problems++;
            if (run.problems <= KEPT_PROBLEMS) {
                err.println("export: skipped bad input at " + p.where() + ": " + p.message());
            }
        });
        if (run.problems > KEPT_PROBLEMS) {
            err.println("export: ... " + (run.problems - KEPT_PROBLEMS) + " more input problems skipped");
        }
        return input + " (" + s.format() + ", " + s.events() + " events, " + s.problems() + " problems)";
    }

    private String readTopic(Run run, PrintWriter err) {
        KafkaConnection kafka = KafkaConnection.load(bootstrapServers, kafkaConfig);
        TopicSource.Summary s = new TopicSource(kafka, topic, err).read(batch -> accept(run, batch));
        run.problems += s.badRecords();
        return topic + " at " + kafka + " (" + s.records() + " records, " + s.badRecords() + " bad, " + run.events
                + " events, " + run.duplicates + " duplicate events dropped)";
    }

    private void accept(Run run, ServiceBatch batch) {
        if ((job != null && !job.equals(batch.job())) || (instance != null && !instance.equals(batch.instance()))) {
            return;
        }
        String where = batch.key() + '\u0000' + batch.source();
        long next = run.nextIndex.getOrDefault(where, 0L);
        long index = batch.firstIndex();
        for (ServiceEvent e : batch.events()) {
            if (index++ < next) {
                run.duplicates++;
                continue;
            }
            run.accept(batch.job(), batch.instance(), e);
        }
        run.nextIndex.put(where, Math.max(next, index));
    }

    static String defaultJob(Path abs) {
        Path dir = Files.isDirectory(abs) ? abs : abs.getParent();
        return dir == null || dir.getFileName() == null
                ? "job"
                : dir.getFileName().toString();
    }

    static String stem(Path abs) {
        String name = abs.getFileName() == null ? "instance" : abs.getFileName().toString();
        for (String ext : new String[] {".jsonl.gz", ".json.gz", ".jsonl", ".json", ".db"}) {
            if (name.endsWith(ext)) {
                return name.substring(0, name.length() - ext.length());
            }
        }
        return name;
    }

    private void summary(PrintWriter out, PrintWriter err, ExportSink sink, Run run, String source) {
        out.println("export: " + source + " -> " + output);
        out.println("  analyzed instances: " + String.join(", ", run.analyzers.keySet()));
        sink.csvRows().forEach((file, rows) -> out.printf("  %-28s %8d rows%n", file, rows));
        out.printf("  %-28s %8d events%n", TraceExport.FILE, sink.traceEvents());
        out.printf("  %-28s %8d tables%n", ProfilerDb.FILE, sink.dbRows().size());
        sink.dbRows().forEach((table, rows) -> out.printf("    %-26s %8d rows%n", table, rows));
        for (Path png : sink.charts()) {
            out.printf("  %-28s written%n", png.getFileName());
        }
        out.println("  requests: " + sink.finishedRequests() + " finished, " + sink.timedOutRequests() + " timed out");
        if (sink.anomalyCount() > 0) {
            out.println("  anomalies: " + sink.anomalyCount());
            sink.anomalies()
                    .forEach(a -> err.println("export: anomaly " + a.kind() + " at " + a.where() + ": " + a.message()));
        }
        out.flush();
        sink.notices().forEach(n -> err.println("export: " + n));
        err.flush();
    }
}
