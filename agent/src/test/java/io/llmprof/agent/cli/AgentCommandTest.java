package io.llmprof.agent.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.Fixtures;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.nsys.NsysFixtures;
import io.llmprof.agent.produce.TraceBatcher;
import io.llmprof.agent.produce.TraceReaders;
import io.llmprof.agent.replay.Speed;
import io.llmprof.agent.service.ServiceFixtures;
import io.llmprof.agent.service.ServiceReaders;
import io.llmprof.agent.service.ServiceSynth;
import io.llmprof.agent.watch.Watcher;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.kafka.common.serialization.Serializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class AgentCommandTest {
    @TempDir
    Path dir;

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private CommandLine cli() {
        CommandLine cl = new CommandLine(new AgentCommand());
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        return cl;
    }

    @Test
    void everyCommandHasHelp() {
        assertThat(cli().execute("--help")).isZero();
        assertThat(out.toString()).contains("replay").contains("watch").contains("bench");
        for (String sub : new String[] {"replay", "watch", "bench"}) {
            assertThat(cli().execute(sub, "--help")).isZero();
        }
        assertThat(out.toString()).contains("--speed").contains("--no-progress").contains("--checkpoint");
        assertThat(out.toString())
                .contains("--poll-interval")
                .contains("--settle")
                .contains("--bootstrap-servers");
    }

    @Test
    void benchPrintsTheParseRate() throws Exception {
        Path file = Fixtures.write(dir, "rank0.json.gz", Fixtures.smallTrace(""));
        assertThat(cli().execute("bench", file.toString())).isZero();
        assertThat(out.toString())
                .contains("rank0.json.gz")
                .contains("MB/s in")
                .contains("MB/s JSON")
                .contains("events/s")
                .contains("10 events (3 kernels")
                .containsPattern("encoded [0-9.]+ B/event")
                .contains("peak heap");
    }

    @Test
    void benchEncodesEachBatchAsTheAgentShipsIt() throws Exception {
        Path file = Fixtures.write(dir, "rank0.json", Fixtures.smallTrace(""));
        ReaderOptions options = ReaderOptions.defaults();
        BenchCommand.Measurement m = BenchCommand.measure(file, options, 4, true);
        // the same batches, encoded here one by one with the topic's serializer
        Serializer<TraceBatch> serializer = Topics.TRACE_EVENTS.valueSerde().serializer();
        long[] expected = {0, 0};
        TraceReaders.read(
                file,
                options,
                new TraceBatcher(
                        TraceFiles.jobName(file),
                        TraceFiles.runName(file),
                        file.toString(),
                        4,
                        TraceBatcher.DEFAULT_MAX_BATCH_BYTES,
                        b -> {
                            expected[0]++;
                            expected[1] += serializer.serialize(Topics.TRACE_EVENTS.name(), b).length;
                        },
                        p -> {}));
        assertThat(m.batches()).isEqualTo(expected[0]).isGreaterThan(2); // 10 events, batches of 4 per lane
        assertThat(m.encodedBytes()).isEqualTo(expected[1]).isPositive();
        assertThat(BenchCommand.measure(file, options, 4, false).encodedBytes()).isEqualTo(-1);

        assertThat(cli().execute("bench", "--no-encode", file.toString())).isZero();
        assertThat(out.toString()).contains("not encoded").doesNotContain("B/event");
    }

    @Test
    void benchReadsAnNsightExportAndSaysSqliteNotJson() throws Exception {
        Path file = NsysFixtures.trtllmSteps(dir).file();
        long events = TraceReaders.read(
                        file,
                        ReaderOptions.defaults(),
                        new TraceBatcher(
                                "job",
                                "run",
                                file.toString(),
                                2048,
                                TraceBatcher.DEFAULT_MAX_BATCH_BYTES,
                                b -> {},
                                p -> {}))
                .eventsRead();
        assertThat(cli().execute("bench", file.toString())).isZero();
        assertThat(out.toString())
                .contains("MB SQLite in")
                .contains(String.format(Locale.ROOT, "%,d events (", events))
                .containsPattern("encoded [0-9.]+ B/event")
                .doesNotContain("JSON");
        assertThat(events).isPositive();
    }

    @Test
    void benchReadsServiceEventsAsTheServiceShipperBatchesThem() throws Exception {
        Path run = dir.resolve("svc");
        ServiceSynth.write(new ServiceSynth.Spec(40, 2, 1), ServiceFixtures.Format.JSONL, run);
        Path file = run.resolve("events.jsonl");
        // the reference: every event read, cut into records of 7 as the shipper cuts them, encoded one by one
        List<ServiceEvent> events = new ArrayList<>();
        ServiceReaders.read(file, events::add, p -> {});
        Serializer<ServiceBatch> serializer = Topics.SERVICE_EVENTS.valueSerde().serializer();
        long bytes = 0;
        long batches = 0;
        for (int from = 0; from < events.size(); from += 7) {
            List<ServiceEvent> part = events.subList(from, Math.min(events.size(), from + 7));
            boolean end = from + 7 >= events.size();
            bytes += serializer.serialize(
                            Topics.SERVICE_EVENTS.name(),
                            new ServiceBatch("svc", "events", file.toString(), from, part, end))
                    .length;
            batches++;
        }
        if (events.size() % 7 == 0) {
            batches++; // the shipper's last record, empty, says end of stream
            bytes += serializer.serialize(
                            Topics.SERVICE_EVENTS.name(),
                            new ServiceBatch("svc", "events", file.toString(), events.size(), List.of(), true))
                    .length;
        }
        BenchCommand.ServiceMeasurement m = BenchCommand.measureService(file, 7, true);
        assertThat(m.summary().events()).isEqualTo(events.size()).isGreaterThan(100);
        assertThat(m.batches()).isEqualTo(batches);
        assertThat(m.encodedBytes()).isEqualTo(bytes);
        assertThat(m.inputBytes()).isEqualTo(java.nio.file.Files.size(file));
        assertThat(m.allocatedBytes()).isPositive(); // HotSpot counts a thread's allocation
        assertThat(BenchCommand.measureService(file, 7, false).encodedBytes()).isEqualTo(-1);

        assertThat(cli().execute("bench", "--batch-size", "7", file.toString())).isZero();
        assertThat(out.toString())
                .contains("events.jsonl: service events (jsonl)")
                .contains(String.format(Locale.ROOT, "%,d events, %,d batches", events.size(), batches))
                .containsPattern("encoded [0-9.]+ B/event")
                .containsPattern("allocated [0-9]+ B/event")
                .contains("0 problems");
        // a chrome_tracing.json is a trace by its name: --service reads it as service events
        assertThat(BenchCommand.isServiceInput(file)).isTrue();
        assertThat(BenchCommand.isServiceInput(run)).isTrue();
        assertThat(BenchCommand.isServiceInput(dir.resolve("rank0.json.gz"))).isFalse();
        assertThat(BenchCommand.isServiceInput(dir.resolve("chrome_tracing.json")))
                .isFalse();
    }

    /** Bad input is no failure of the bench, but it says so and exits non-zero, as every offline command does. */
    @Test
    void benchOfBadInputPrintsItsFiguresAndExitsNonZero() throws Exception {
        Path notATrace = Fixtures.write(dir, "not-a-trace.json", "{\"traceEvents\": 7}");
        Path badLines = dir.resolve("bad.jsonl");
        java.nio.file.Files.writeString(badLines, "{\"ts_ns\":1,\"name\":\"a\"}\nnot json\n");
        for (Path file : List.of(notATrace, badLines)) {
            out.getBuffer().setLength(0);
            err.getBuffer().setLength(0);
            assertThat(cli().execute("bench", file.toString()))
                    .as(file.toString())
                    .isEqualTo(1);
            assertThat(out.toString()).contains(file.getFileName().toString()).contains("1 problems");
            assertThat(err.toString()).contains("agent bench: " + file + ": 1 problem(s) in the input");
        }
        assertThat(out.toString()).contains("service events (jsonl)").contains("1 events");
        // the warning says where, once however many reads the bench makes
        assertThat(err.toString())
                .containsOnlyOnce("agent bench: INVALID_JSON " + badLines + ": line 2: not a JSON object");
        out.getBuffer().setLength(0);
        err.getBuffer().setLength(0);
        java.nio.file.Files.writeString(badLines, "x\n".repeat(BenchCommand.PROBLEMS_SHOWN + 5));
        assertThat(cli().execute("bench", "--warmup", "1", "--repeat", "2", badLines.toString()))
                .isEqualTo(1);
        assertThat(err.toString().lines().filter(l -> l.contains(": line "))).hasSize(BenchCommand.PROBLEMS_SHOWN);
        assertThat(err.toString())
                .containsOnlyOnce("more problems, not shown")
                .contains((BenchCommand.PROBLEMS_SHOWN + 5) + " problem(s) in the input");
    }

    @Test
    void parsesWatchOptions() {
        CommandLine cl = cli();
        CommandLine.ParseResult parsed = cl.parseArgs(
                "watch", dir.toString(), "--poll-interval", "250ms", "--settle", "1.5s", "--checkpoint", "cp.json");
        WatchCommand watch = (WatchCommand) parsed.subcommand().commandSpec().userObject();
        Watcher.Options options = watch.options();
        assertThat(options.pollInterval()).isEqualTo(Duration.ofMillis(250));
        assertThat(options.settle()).isEqualTo(Duration.ofMillis(1500));
        assertThat(options.checkpoint()).isEqualTo(Path.of("cp.json"));
        assertThat(options.kafka().bootstrapServers()).isEqualTo("localhost:9092");
    }

    @Test
    void parsesServiceAndIngestOptions() {
        CommandLine.ParseResult parsed =
                cli().parseArgs("service", "--input", "run", "--instance", "node-7", "--batch-size", "200");
        ServiceCommand service =
                (ServiceCommand) parsed.subcommand().commandSpec().userObject();
        assertThat(service.input).isEqualTo(Path.of("run"));
        assertThat(service.job).isNull(); // the input directory's name, at run time
        assertThat(service.instance).isEqualTo("node-7");
        assertThat(service.kafka.batchSize).isEqualTo(200);
        assertThat(service.kafka.connection().bootstrapServers()).isEqualTo("localhost:9092");
        parsed = cli().parseArgs("ingest", "--port", "0", "--max-body-bytes", "1024");
        IngestCommand ingest = (IngestCommand) parsed.subcommand().commandSpec().userObject();
        assertThat(ingest.port).isZero();
        assertThat(ingest.maxBodyBytes).isEqualTo(1024);
        assertThat(ingest.kafka.batchSize).isEqualTo(1000);
        assertThat(cli().execute("service")).isEqualTo(2);
        assertThat(err.toString()).contains("--input");
    }

    @Test
    void serviceKeepsOneCheckpointPerClusterJobInstanceAndInputUnderTheStateDirectory() {
        CommandLine.ParseResult parsed = cli().parseArgs("service", "--input", "run", "--checkpoint", "cp.json");
        ServiceCommand service =
                (ServiceCommand) parsed.subcommand().commandSpec().userObject();
        assertThat(service.checkpoint).isEqualTo(Path.of("cp.json"));
        assertThat(service.noCheckpoint).isFalse();
        parsed = cli().parseArgs("service", "--input", "run", "--no-checkpoint");
        assertThat(((ServiceCommand) parsed.subcommand().commandSpec().userObject()).noCheckpoint)
                .isTrue();

        String before = System.getProperty("llmprof.state.dir");
        System.setProperty("llmprof.state.dir", dir.toString());
        try {
            Path in = Path.of("run");
            Path cp = ServiceCommand.defaultCheckpoint("k:9092", "job", "node-7", in);
            assertThat(cp.getParent()).isEqualTo(dir.resolve("service"));
            assertThat(ServiceCommand.defaultCheckpoint("k:9092", "job", "node-7", in.toAbsolutePath()))
                    .isEqualTo(cp);
            assertThat(List.of(
                            ServiceCommand.defaultCheckpoint("other:9092", "job", "node-7", in),
                            ServiceCommand.defaultCheckpoint("k:9092", "job2", "node-7", in),
                            ServiceCommand.defaultCheckpoint("k:9092", "job", "node-8", in),
                            ServiceCommand.defaultCheckpoint("k:9092", "job", "node-7", Path.of("run2"))))
                    .doesNotContain(cp)
                    .doesNotHaveDuplicates();
            // replay's own place is kept: its checkpoints from before are still found
            assertThat(ReplayCommand.defaultCheckpoint("k:9092", "null", "null", List.of(Path.of("/t/a.json"))))
                    .isEqualTo(dir.resolve("replay").resolve("7567f2ca7528e2bd.json"));
        } finally {
            if (before == null) {
                System.clearProperty("llmprof.state.dir");
            } else {
                System.setProperty("llmprof.state.dir", before);
            }
        }
    }

    @Test
    void parsesReplayOptionsAndRejectsABadSpeed() {
        CommandLine.ParseResult parsed = cli().parseArgs("replay", "a.json", "--speed", "10", "--job", "j");
        ReplayCommand replay = (ReplayCommand) parsed.subcommand().commandSpec().userObject();
        assertThat(replay.speed).isEqualTo(new Speed(10));
        assertThat(replay.shipping.connection().bootstrapServers()).isEqualTo("localhost:9092");
        assertThat(cli().execute("replay", "a.json", "--speed", "fast")).isEqualTo(2);
        assertThat(err.toString()).contains("speed");
    }

    @Test
    void replayAndWatchTakeAReorderWindowOfAtLeastOne() {
        WatchCommand watch = (WatchCommand) cli().parseArgs("watch", dir.toString(), "--reorder-window", "300000")
                .subcommand()
                .commandSpec()
                .userObject();
        assertThat(watch.options().readerOptions().reorderWindow()).isEqualTo(300_000);
        assertThat(watch.options().readerOptions().interleaveLanes()).isTrue();
        ReplayCommand replay = (ReplayCommand) cli().parseArgs("replay", "a.json", "--host-first")
                .subcommand()
                .commandSpec()
                .userObject();
        assertThat(replay.shipping.readerOptions().reorderWindow()).isEqualTo(ReaderOptions.DEFAULT_REORDER_WINDOW);
        assertThat(replay.shipping.readerOptions().interleaveLanes()).isFalse();
        assertThat(replay.shipping.readerOptions().exactOrder())
                .as("host-first: the file's order")
                .isFalse();

        assertThat(cli().execute("watch", dir.toString(), "--once", "--reorder-window", "0"))
                .isEqualTo(2);
        assertThat(err.toString()).contains("--reorder-window must be at least 1, got 0");
        err.getBuffer().setLength(0);
        assertThat(cli().execute("replay", "a.json", "--reorder-window", "0")).isEqualTo(2);
        assertThat(err.toString()).contains("--reorder-window must be at least 1, got 0");
    }

    @Test
    void replayAndWatchShipInExactOrderUnlessToldToSendAsRead() {
        ReplayCommand replay = (ReplayCommand)
                cli().parseArgs("replay", "a.json").subcommand().commandSpec().userObject();
        assertThat(replay.shipping.readerOptions()).isEqualTo(ReaderOptions.shipping());
        WatchCommand watch = (WatchCommand) cli().parseArgs("watch", dir.toString(), "--no-exact-order")
                .subcommand()
                .commandSpec()
                .userObject();
        assertThat(watch.options().readerOptions().exactOrder()).isFalse();
        assertThat(watch.options().readerOptions().interleaveLanes()).isTrue();
        replay = (ReplayCommand) cli().parseArgs("replay", "a.json", "--exact-order", "--reorder-window", "100")
                .subcommand()
                .commandSpec()
                .userObject();
        assertThat(replay.shipping.readerOptions().exactOrder()).isTrue();
        assertThat(replay.shipping.readerOptions().reorderWindow()).isEqualTo(100);
    }

    @Test
    void parsesDurations() {
        assertThat(Converters.parseDuration("500ms")).isEqualTo(Duration.ofMillis(500));
        assertThat(Converters.parseDuration("2s")).isEqualTo(Duration.ofSeconds(2));
        assertThat(Converters.parseDuration("3")).isEqualTo(Duration.ofSeconds(3));
        assertThat(Converters.parseDuration("1m")).isEqualTo(Duration.ofMinutes(1));
        assertThat(Converters.parseDuration("PT0.5S")).isEqualTo(Duration.ofMillis(500));
    }
}
