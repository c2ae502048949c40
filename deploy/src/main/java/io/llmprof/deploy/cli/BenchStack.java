package io.llmprof.deploy.cli;

import io.llmprof.agent.ingest.ServiceIngestServer;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.produce.TraceProducer;
import io.llmprof.agent.service.ServiceShipper;
import io.llmprof.dashboard.DashboardConfig;
import io.llmprof.dashboard.DashboardServer;
import io.llmprof.deploy.broker.BrokerConfig;
import io.llmprof.deploy.broker.EmbeddedKafka;
import io.llmprof.streams.topology.StreamsApp;
import io.llmprof.streams.topology.StreamsAppConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * What the bench commands measure, in one JVM: an embedded broker, the streams app (running), the dashboard, the
 * agent's producer and its HTTP ingest, all on free ports and one registry. Closed in the reverse order.
 */
final class BenchStack implements AutoCloseable {
    final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    final AgentMeters agentMeters = new AgentMeters(registry);
    final String bootstrap;
    final DashboardServer dashboard;
    final TraceProducer producer;
    final ServiceIngestServer ingest;
    private final List<AutoCloseable> open = new ArrayList<>();

    /**
     * @param dir where the broker's data and the streams state go
     * @param modelConfig the streams app's model config, or null
     * @param streamsOverrides Kafka Streams properties for the streams app, applied last
     */
    BenchStack(Path dir, Path modelConfig, java.util.Map<String, String> streamsOverrides) throws Exception {
        try {
            EmbeddedKafka kafka = open(
                    new EmbeddedKafka(BrokerConfig.defaults().withPort(0).withDataDir(dir.resolve("broker"))).start());
            bootstrap = kafka.bootstrapServers();
            // One layout for every component (the streams app, the producers, the replayer): the default one, as a
            // user's stack has it; the streams app creates the topics, the others find them as they expect.
            io.llmprof.events.TopicLayout layout = io.llmprof.events.TopicLayout.defaults();
            StreamsAppConfig.Builder streams = StreamsAppConfig.builder(bootstrap)
                    .topics(layout)
                    .stateDir(dir.resolve("state"))
                    .overrides(streamsOverrides);
            if (modelConfig != null) {
                streams.modelConfig(modelConfig);
            }
            StreamsApp app = open(StreamsApp.start(streams.build(), registry));
            dashboard = open(
                    DashboardServer.start(DashboardConfig.defaults(bootstrap).withHttpPort(0), registry));
            producer = open(TraceProducer.connect(bootstrap, layout, agentMeters));
            ingest = open(new ServiceIngestServer(
                            shipper(),
                            agentMeters,
                            new ServiceIngestServer.Options("127.0.0.1", 0, ServiceIngestServer.DEFAULT_MAX_BODY_BYTES))
                    .start());
            if (!app.awaitRunning(Duration.ofSeconds(60))) {
                throw new IllegalStateException("the streams app did not reach RUNNING within 60 s");
            }
        } catch (Exception | Error e) {
            close();
            throw e;
        }
    }

    /** A shipper of service events through the stack's producer. */
    ServiceShipper shipper() {
        return new ServiceShipper(producer, agentMeters, ServiceShipper.DEFAULT_BATCH_SIZE);
    }

    private <T extends AutoCloseable> T open(T c) {
        open.add(c);
        return c;
    }

    @Override
    public void close() throws Exception {
        Exception first = null;
        for (int i = open.size() - 1; i >= 0; i--) {
            try {
                open.get(i).close();
            } catch (Exception e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        open.clear();
        if (first != null) {
            throw first;
        }
    }
}
