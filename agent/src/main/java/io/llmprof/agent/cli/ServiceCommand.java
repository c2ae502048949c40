package io.llmprof.agent.cli;

import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.produce.TraceProducer;
import io.llmprof.agent.service.ServiceReaders;
import io.llmprof.agent.service.ServiceShipper;
import java.io.PrintWriter;
import java.nio.file.Path;
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
            "The last batch says end-of-stream, so unfinished requests are reported at once. See docs/service-events.md."
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

    public ServiceCommand() {}

    @Override
    public Integer call() throws Exception {
        String j = job != null ? job : ServiceReaders.defaultJob(input);
        String i = instance != null ? instance : ServiceReaders.defaultInstance(input);
        AgentMeters meters = new AgentMeters(
                parent == null
                        ? new io.micrometer.core.instrument.simple.SimpleMeterRegistry()
                        : parent.meterRegistry());
        long t0 = System.nanoTime();
        ServiceShipper.Result r;
        try (TraceProducer producer = TraceProducer.connect(
                kafka.connection(), kafka.topics(), meters, TraceProducer.Delivery.untilAcknowledged(giveUpAfter))) {
            r = new ServiceShipper(producer, meters, kafka.batchSize).shipFile(input, j, i);
        } catch (io.llmprof.agent.produce.GaveUpException e) {
            spec.commandLine()
                    .getErr()
                    .printf(
                            "FAILED %s: %s; events after the last acknowledged batch were not sent, a re-run sends"
                                    + " the file again (docs/runbook.md \"Kafka outage\")%n",
                            input, e.getMessage());
            return 1;
        }
        double s = (System.nanoTime() - t0) / 1e9;
        PrintWriter out = spec.commandLine().getOut();
        out.printf(
                Locale.ROOT,
                "shipped %s as %s/%s (%s): %,d events in %,d batches, %d input problem(s), %.2f s (%,.0f events/s)%n",
                input,
                j,
                i,
                r.format(),
                r.events(),
                r.batches(),
                r.problems(),
                s,
                r.events() / Math.max(s, 1e-9));
        out.flush();
        return 0;
    }
}
