package io.llmprof.agent.cli;

import io.llmprof.agent.checkpoint.CheckpointFiles;
import io.llmprof.agent.checkpoint.TopicIds;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.produce.GaveUpException;
import io.llmprof.agent.produce.TraceProducer;
import io.llmprof.agent.service.ServiceReaders;
import io.llmprof.agent.service.ServiceResume;
import io.llmprof.agent.service.ServiceShipper;
import io.llmprof.events.KafkaConnection;
import io.llmprof.events.Topics;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/** {@code agent service --input PATH}: ship a service-event input to its end. */
@Command(
        name = "service",
        mixinStandardHelpOptions = true,
        description = {
            "Ship service events to llmprof.service-events: a raw msServiceProfiler ms_service_*.db (slice or mstx",
            "layout), a directory of them (merged by time), a chrome_tracing.json, or llmprof JSON-lines (.jsonl).",
            "The last batch says end-of-stream, so unfinished requests are reported at once. See docs/service-events.md.",
            "A broker outage is waited out (see --give-up-after). What Kafka acknowledged is kept in a checkpoint, so"
                    + " running the same command again after a give-up, Ctrl-C or kill sends only what Kafka did not"
                    + " acknowledge, under the same indexes (docs/runbook.md \"Kafka outage\")."
        })
public final class ServiceCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @ParentCommand
    AgentCommand parent;

    @Option(names = "--input", required = true, description = "File or directory to ship.")
    Path input;

    @Option(names = "--job", description = "Job identity (default: the input directory's name).")
    String job;

    @Option(
            names = "--instance",
            description = "Serving instance (default: the databases' meta hostname[-dp<rank>], else the file stem).")
    String instance;

    @Mixin
    KafkaOptions kafka = new KafkaOptions();

    @Option(
            names = "--give-up-after",
            converter = Converters.DurationConverter.class,
            description = "Stop (exit 1) after this long without an acknowledgement from Kafka (e.g. 10m). Default:"
                    + " wait for Kafka without a limit, retrying with backoff; no batch is skipped.")
    java.time.Duration giveUpAfter;

    @Option(
            names = "--checkpoint",
            paramLabel = "FILE",
            description = "Checkpoint file: per input, job and instance, how many of its events (in the readers' order)"
                    + " Kafka acknowledged, written every " + ServiceResume.CHECKPOINT_EVERY_BATCHES + " batches and"
                    + " when it stops (default: one per Kafka cluster, job, instance and input under"
                    + " $XDG_STATE_HOME/llmprof/service/, else ~/.local/state/llmprof/service/). An input it says was"
                    + " acknowledged whole is not sent again; one that changed since, or a checkpoint that cannot be"
                    + " read or was written for another llmprof.service-events topic, is sent from the start.")
    Path checkpoint;

    @Option(
            names = "--no-checkpoint",
            description = "No checkpoint: the input is sent from its start (the streams app drops events it has).")
    boolean noCheckpoint;

    public ServiceCommand() {}

    /**
     * Where the checkpoint is by default ({@link CheckpointFiles#defaultPath}): one file per cluster, job, instance
     * and input under {@code service/}.
     */
    static Path defaultCheckpoint(String bootstrap, String job, String instance, Path input) {
        return CheckpointFiles.defaultPath(
                "service",
                List.of(
                        bootstrap,
                        job,
                        instance,
                        input.toAbsolutePath().normalize().toString()));
    }

    @Override
    public Integer call() throws Exception {
        String j = job != null ? job : ServiceReaders.defaultJob(input);
        String i = instance != null ? instance : ServiceReaders.defaultInstance(input);
        KafkaConnection connection = kafka.connection();
        Path cp = noCheckpoint
                ? null
                : checkpoint != null ? checkpoint : defaultCheckpoint(connection.bootstrapServers(), j, i, input);
        AgentMeters meters = new AgentMeters(
                parent == null
                        ? new io.micrometer.core.instrument.simple.SimpleMeterRegistry()
                        : parent.meterRegistry());
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        long t0 = System.nanoTime();
        ServiceResume.Report r;
        // Ctrl-C: stop at the next event, write down what Kafka acknowledged and report before the JVM exits.
        Thread shipping = Thread.currentThread();
        try (CtrlC ctrlC = CtrlC.stops(shipping::interrupt, "llmprof-service-stop")) {
            try (TraceProducer producer = TraceProducer.connect(
                    connection, kafka.topics(), meters, TraceProducer.Delivery.untilAcknowledged(giveUpAfter))) {
                ServiceResume resume = new ServiceResume(
                        new ServiceShipper(producer, meters, kafka.batchSize),
                        cp,
                        () -> TopicIds.of(connection, Topics.SERVICE_EVENTS.name()),
                        line -> {
                            err.println("WARNING " + line);
                            err.flush();
                        });
                r = resume.ship(input, j, i);
                Thread.interrupted(); // a Ctrl-C after the last event: the producer still closes normally
            } catch (GaveUpException e) {
                err.printf("FAILED %s: %s%n", input, e.getMessage());
                err.flush();
                return 1;
            }
            return report(r, cp, j, i, (System.nanoTime() - t0) / 1e9, out, err);
        }
    }

    private int report(
            ServiceResume.Report r, Path cp, String j, String i, double s, PrintWriter out, PrintWriter err) {
        if (r.failure() != null) {
            err.printf(
                    Locale.ROOT,
                    "FAILED %s: %s; Kafka acknowledged %,d of its events. %s (docs/runbook.md \"Kafka outage\")%n",
                    input,
                    r.failure(),
                    r.acknowledged(),
                    cp != null
                            ? "Run the same command again to send the rest, from the checkpoint " + cp
                            : "No checkpoint (--no-checkpoint): a re-run sends the input from its start, and the"
                                    + " streams app drops the events it has");
            err.flush();
            return 1;
        }
        if (r.skipped()) {
            out.printf(
                    Locale.ROOT,
                    "%s as %s/%s: every event (%,d) acknowledged by Kafka in an earlier run (checkpoint %s); nothing"
                            + " sent%s%n",
                    input,
                    j,
                    i,
                    r.acknowledged(),
                    cp,
                    ReplayCommand.problemsBefore(r.problemsBefore()));
            out.flush();
            return ReplayCommand.inputProblems(err, "agent service", r.problemsBefore());
        }
        ServiceShipper.Result x = r.result();
        out.printf(
                Locale.ROOT,
                "shipped %s as %s/%s (%s): %,d events in %,d batches%s, %d input problem(s), %.2f s (%,.0f events/s)%n",
                input,
                j,
                i,
                x.format(),
                x.events(),
                x.batches(),
                x.alreadySent() > 0
                        ? String.format(
                                Locale.ROOT,
                                " (resumed: %,d events acknowledged in an earlier run, not sent again)",
                                x.alreadySent())
                        : "",
                x.problems(),
                s,
                x.events() / Math.max(s, 1e-9));
        out.flush();
        return ReplayCommand.inputProblems(err, "agent service", x.problems());
    }
}
