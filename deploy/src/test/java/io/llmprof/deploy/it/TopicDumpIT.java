package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.produce.TraceProducer;
import io.llmprof.deploy.broker.BrokerConfig;
import io.llmprof.deploy.broker.EmbeddedKafka;
import io.llmprof.deploy.cli.Llmprof;
import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.Json;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * {@code llmprof topic dump} against a real in-process KRaft broker: protobuf trace batches, sent compressed by the
 * agent's own producer settings, print as the JSON of their records; a record that is not a batch is one error line
 * with its topic/partition@offset and the dump goes on; a JSON topic prints as it is.
 */
class TopicDumpIT {
    private static final TraceBatch FIRST = new TraceBatch(
            "llama",
            "run1",
            "0",
            TraceBatch.Lane.GPU,
            "trace.json",
            0,
            List.of(TraceEvent.kernel("ampere_gemm ünï", 1_700_000_000_000_000_000L, 900, 0, 7)),
            false);
    private static final TraceBatch SECOND =
            new TraceBatch("llama", "run1", "0", TraceBatch.Lane.GPU, "trace.json", 1, List.of(), true);

    @Test
    void printsDecodedBatchesAndOneLinePerUndecodableRecord() throws Exception {
        String topic = Topics.TRACE_EVENTS.name();
        try (EmbeddedKafka kafka = new EmbeddedKafka(BrokerConfig.defaults()).start()) {
            String bootstrap = kafka.bootstrapServers();
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
                admin.createTopics(List.of(
                                new NewTopic(topic, 1, (short) 1), new NewTopic(Topics.ANOMALIES.name(), 1, (short) 1)))
                        .all()
                        .get(30, TimeUnit.SECONDS);
            }
            Anomaly anomaly = new Anomaly("llama", "0", AnomalyKind.UNPROCESSABLE_RECORD, "bad", "here");
            byte[] anomalyJson = Topics.ANOMALIES.valueSerde().serializer().serialize("t", anomaly);
            try (KafkaProducer<byte[], byte[]> p =
                    new KafkaProducer<>(TraceProducer.producerConfig(bootstrap, "topic-dump-it"))) {
                send(p, topic, Topics.TRACE_EVENTS.valueSerde().serializer().serialize(topic, FIRST));
                send(p, topic, "{\"job\":\"llama\",\"former\":\"json\"}".getBytes(StandardCharsets.UTF_8));
                send(p, topic, Topics.TRACE_EVENTS.valueSerde().serializer().serialize(topic, SECOND));
                send(p, Topics.ANOMALIES.name(), anomalyJson);
            }

            Result all = dump("--topic", topic, "--bootstrap-servers", bootstrap, "--from-beginning");
            assertThat(all.code).as(all.err).isZero();
            List<JsonNode> lines = all.lines();
            assertThat(lines).hasSize(2);
            assertThat(lines.get(0).get("offset").asLong()).isZero();
            assertThat(lines.get(0).get("key").asText()).isEqualTo("llama/0");
            assertThat(Json.mapper().treeToValue(lines.get(0).get("value"), TraceBatch.class))
                    .isEqualTo(FIRST);
            assertThat(lines.get(1).get("offset").asLong()).isEqualTo(2);
            assertThat(Json.mapper().treeToValue(lines.get(1).get("value"), TraceBatch.class))
                    .isEqualTo(SECOND);
            assertThat(all.err)
                    .contains("topic dump: cannot decode llmprof.trace-events/0@1: not a llmprof.trace-events record")
                    .contains("2 record(s) printed, 1 undecodable");

            Result one = dump(
                    "--topic",
                    topic,
                    "--bootstrap-servers",
                    bootstrap,
                    "--partition",
                    "0",
                    "--offset",
                    "2",
                    "--max",
                    "1");
            assertThat(one.code).as(one.err).isZero();
            assertThat(one.lines()).singleElement().satisfies(n -> assertThat(
                            Json.mapper().treeToValue(n.get("value"), TraceBatch.class))
                    .isEqualTo(SECOND));

            Result json =
                    dump("--topic", Topics.ANOMALIES.name(), "--bootstrap-servers", bootstrap, "--from-beginning");
            assertThat(json.code).as(json.err).isZero();
            assertThat(json.out.strip()).endsWith("\"value\":" + new String(anomalyJson, StandardCharsets.UTF_8) + "}");
        }
    }

    private static void send(KafkaProducer<byte[], byte[]> p, String topic, byte[] value) throws Exception {
        p.send(new ProducerRecord<>(topic, "llama/0".getBytes(StandardCharsets.UTF_8), value))
                .get(30, TimeUnit.SECONDS);
    }

    private record Result(int code, String out, String err) {
        List<JsonNode> lines() throws Exception {
            List<JsonNode> nodes = new ArrayList<>();
            for (String line : out.strip().split("\n")) {
                nodes.add(Json.mapper().readTree(line));
            }
            return nodes;
        }
    }

    private static Result dump(String... args) {
        StringWriter so = new StringWriter();
        StringWriter se = new StringWriter();
        CommandLine cl = Llmprof.commandLine();
        cl.setOut(new PrintWriter(so));
        cl.setErr(new PrintWriter(se));
        String[] full = new String[args.length + 2];
        full[0] = "topic";
        full[1] = "dump";
        System.arraycopy(args, 0, full, 2, args.length);
        int code = cl.execute(full);
        return new Result(code, so.toString(), se.toString());
    }
}
