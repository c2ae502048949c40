package io.llmprof.agent.cli;

import io.llmprof.agent.ingest.ServiceIngestServer;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.produce.TraceProducer;
import io.llmprof.agent.service.ServiceShipper;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/** {@code agent ingest --port P}: serve the HTTP ingest of service events until stopped. */
@Command(
        name = "ingest",
        mixinStandardHelpOptions = true,
        description = {
            "Serve POST /ingest/service-events?job=J&instance=I (JSON-lines v1 body) and GET /health; accepted",
            "bodies go to llmprof.service-events. See docs/service-events.md."
        })
public final class IngestCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @ParentCommand
    AgentCommand parent;

    @Option(names = "--port", defaultValue = "8082", description = "HTTP port (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(
            names = {"--bind", "--host"},
            defaultValue = "127.0.0.1",
            description =
                    "Address to bind; 0.0.0.0 for every interface (default: ${DEFAULT-VALUE}: this machine only).")
    String host;

    @Option(
            names = "--max-body-bytes",
            defaultValue = "16777216",
            description = "Largest request body; larger ones get 413 (default: ${DEFAULT-VALUE}).")
    long maxBodyBytes;

    @Option(
            names = "--api-token-file",
            paramLabel = "FILE",
            description = "Posts need Authorization: Bearer <the file's first line>; without it, the environment"
                    + " variable LLMPROF_API_TOKEN when set.")
    java.nio.file.Path apiTokenFile;

    @Mixin
    KafkaOptions kafka = new KafkaOptions();

    public IngestCommand() {}

    @Override
    public Integer call() throws Exception {
        AgentMeters meters = new AgentMeters(
                parent == null
                        ? new io.micrometer.core.instrument.simple.SimpleMeterRegistry()
                        : parent.meterRegistry());
        io.llmprof.events.access.ApiToken token =
                io.llmprof.events.access.ApiToken.resolve(apiTokenFile, System.getenv());
        CountDownLatch stopped = new CountDownLatch(1);
        try (TraceProducer producer = TraceProducer.connect(
                        kafka.connection(),
                        kafka.topics(),
                        meters,
                        // a body Kafka does not take within the delivery timeout is answered 503: the
                        // emitter resends it, so the ingest must not wait without a limit
                        TraceProducer.Delivery.FAIL_FAST);
                ServiceIngestServer server = new ServiceIngestServer(
                                new ServiceShipper(producer, meters, kafka.batchSize),
                                meters,
                                new ServiceIngestServer.Options(host, port, maxBodyBytes).withToken(token))
                        .start()) {
            Runtime.getRuntime().addShutdownHook(new Thread(stopped::countDown, "llmprof-ingest-shutdown"));
            spec.commandLine()
                    .getOut()
                    .printf(
                            "ingest listening on %s:%d%s (%s; %s)%n",
                            host,
                            server.port(),
                            ServiceIngestServer.PATH,
                            io.llmprof.events.access.Binding.describe(host),
                            token.required() ? "API token required" : "no API token: anyone who reaches it may post");
            spec.commandLine().getOut().flush();
            stopped.await();
        }
        return 0;
    }
}
