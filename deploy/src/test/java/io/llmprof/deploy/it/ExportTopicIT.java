package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.service.ServiceFixtures;
import io.llmprof.agent.service.ServiceFixtures.Fixture;
import io.llmprof.deploy.broker.BrokerConfig;
import io.llmprof.deploy.broker.EmbeddedKafka;
import io.llmprof.deploy.cli.Llmprof;
import io.llmprof.events.Topics;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code llmprof export --topic} against a real in-process KRaft broker: a fixture's events recorded on
 * llmprof.service-events in two batches, the first re-sent (as after an agent crash) and a record that is not a
 * ServiceBatch in between; the export must count the request once, name the bad record by topic/partition@offset
 * and still match the fixture's truth.
 */
class ExportTopicIT {
    @Test
    void exportsARecordedTopicOnceSkippingABadRecord(@TempDir Path dir) throws Exception {
        Fixture f = ServiceFixtures.requeued();
        String topic = Topics.SERVICE_EVENTS.name();
        try (EmbeddedKafka kafka = new EmbeddedKafka(BrokerConfig.defaults()).start()) {
            try (Admin admin =
                    Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()))) {
                admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1)))
                        .all()
                        .get(30, TimeUnit.SECONDS);
            }
            List<ServiceEvent> events = f.events();
            int half = events.size() / 2;
            ServiceBatch first = new ServiceBatch("job", "inst", "test", 0, events.subList(0, half), false);
            ServiceBatch second =
                    new ServiceBatch("job", "inst", "test", half, events.subList(half, events.size()), true);
            Serializer<ServiceBatch> values = Topics.SERVICE_EVENTS.valueSerde().serializer();
            RecordMetadata bad;
            try (KafkaProducer<String, byte[]> p = new KafkaProducer<>(
                    Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()),
                    new StringSerializer(),
                    new ByteArraySerializer())) {
                p.send(new ProducerRecord<>(topic, first.key(), values.serialize(topic, first)))
                        .get(30, TimeUnit.SECONDS);
                bad = p.send(new ProducerRecord<>(topic, first.key(), "{not a batch".getBytes()))
                        .get(30, TimeUnit.SECONDS);
                p.send(new ProducerRecord<>(topic, first.key(), values.serialize(topic, first)))
                        .get(30, TimeUnit.SECONDS); // re-sent: its events must be dropped
                p.send(new ProducerRecord<>(topic, second.key(), values.serialize(topic, second)))
                        .get(30, TimeUnit.SECONDS);
            }

            Path out = dir.resolve("out");
            StringWriter so = new StringWriter();
            StringWriter se = new StringWriter();
            CommandLine cl = Llmprof.commandLine();
            cl.setOut(new PrintWriter(so));
            cl.setErr(new PrintWriter(se));
            int code = cl.execute(
                    "export",
                    "--topic",
                    topic,
                    "--bootstrap-servers",
                    kafka.bootstrapServers(),
                    "--output",
                    out.toString());
            // 3: the bad record was skipped, so the topic was read only in part (docs/analysis.md "Exit codes")
            assertThat(code).as(se.toString()).isEqualTo(3);
            assertThat(se.toString()).contains("skipped bad record " + topic + "/0@" + bad.offset());
            assertThat(so.toString())
                    .contains("4 records, 1 bad")
                    .contains(half + " duplicate events dropped")
                    .contains("1 finished, 0 timed out");
            // requeued fixture: TTFT 260 µs, e2e 820 µs, queue wait 400 µs over 2 enqueues, 3 output tokens
            List<String> request = Files.readAllLines(out.resolve("request.csv"));
            assertThat(request).hasSize(2);
            assertThat(request.get(1))
                    .startsWith("1,")
                    .contains(",8,3,0.82,0.4,0.26,")
                    .contains(",FINISHED,stop,0.28,")
                    .endsWith(",job/inst");
        }
    }
}
