package io.llmprof.streams.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.streams.topology.StreamsAppConfig;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

class StreamsCommandTest {
    @Test
    void options_become_the_app_config() {
        StreamsCommand cmd = new StreamsCommand();
        new CommandLine(cmd)
                .parseArgs(
                        "--bootstrap-servers", "k1:9092,k2:9092",
                        "--config", "/models/dsv3/config.json",
                        "--profile", "dsv3_mla",
                        "--anchor-kernel", "flash_fwd_mla_combine",
                        "--num-layers", "61",
                        "--application-id", "prof-a",
                        "--state-dir", "/var/lib/llmprof",
                        "--idle-timeout", "2m",
                        "--replication-factor", "3",
                        "--partitions", "6",
                        "--processing-guarantee", "at_least_once",
                        "--commit-interval", "300ms",
                        "--streams-property", "num.stream.threads=2",
                        "--streams-property", "producer.linger.ms=5",
                        "--service-request-timeout", "90s",
                        "--service-model-config", "/models/qwen3/config.json",
                        "--service-kv-total-blocks", "4096");
        StreamsAppConfig c = cmd.config();
        assertThat(c.bootstrapServers()).isEqualTo("k1:9092,k2:9092");
        assertThat(c.modelConfig()).isEqualTo(Path.of("/models/dsv3/config.json"));
        assertThat(c.profile()).isEqualTo("dsv3_mla");
        assertThat(c.anchorKernel()).isEqualTo("flash_fwd_mla_combine");
        assertThat(c.numLayers()).isEqualTo(61);
        assertThat(c.effectiveApplicationId()).isEqualTo("prof-a");
        assertThat(c.stateDir()).isEqualTo(Path.of("/var/lib/llmprof"));
        assertThat(c.effectiveIdleTimeout()).isEqualTo(Duration.ofMinutes(2));
        assertThat(c.topics().replicationFactor()).isEqualTo((short) 3);
        assertThat(c.topics().inputPartitions()).isEqualTo(6);
        assertThat(c.topics().outputPartitions()).isEqualTo(6);
        assertThat(c.effectiveProcessingGuarantee()).isEqualTo("at_least_once");
        assertThat(c.effectiveCommitInterval()).isEqualTo(Duration.ofMillis(300));
        assertThat(c.overrides()).containsEntry("num.stream.threads", "2").containsEntry("producer.linger.ms", "5");
        assertThat(c.streamsProperties())
                .containsEntry("commit.interval.ms", 300L)
                .containsEntry("num.stream.threads", "2")
                .containsEntry("producer.linger.ms", "5");
        assertThat(c.effectiveService().requestTimeout()).isEqualTo(Duration.ofSeconds(90));
        assertThat(c.effectiveService().kvTotalBlocks()).isEqualTo(4096L);
        assertThat(c.serviceModelConfig()).isEqualTo(Path.of("/models/qwen3/config.json"));
    }

    @Test
    void a_kafka_config_file_reaches_every_streams_client(@org.junit.jupiter.api.io.TempDir Path tmp) throws Exception {
        Path file = tmp.resolve("client.properties");
        java.nio.file.Files.writeString(
                file, "bootstrap.servers=secure:9093\nsecurity.protocol=SSL\nssl.truststore.location=/etc/trust.jks\n");
        StreamsCommand cmd = new StreamsCommand();
        new CommandLine(cmd).parseArgs("--kafka-config", file.toString());
        java.util.Properties p = cmd.config().streamsProperties();
        // unprefixed client settings: Kafka Streams gives them to its producers, consumers and admin
        assertThat(p)
                .containsEntry("bootstrap.servers", "secure:9093")
                .containsEntry("security.protocol", "SSL")
                .containsEntry("ssl.truststore.location", "/etc/trust.jks")
                .containsEntry("processing.guarantee", "exactly_once_v2");
    }

    @Test
    void without_options_it_targets_a_local_broker_with_defaults() {
        StreamsCommand cmd = new StreamsCommand();
        new CommandLine(cmd).parseArgs();
        StreamsAppConfig c = cmd.config();
        assertThat(c.bootstrapServers()).isEqualTo("localhost:9092");
        assertThat(c.effectiveApplicationId()).isEqualTo("llmprof-streams");
        assertThat(c.stateDir()).isNull();
        assertThat(c.profile()).isNull();
        assertThat(cmd.metricsPort).isNull();
    }

    @Test
    void help_lists_every_option() {
        StringWriter out = new StringWriter();
        int code = new CommandLine(new StreamsCommand())
                .setOut(new PrintWriter(out))
                .execute("--help");
        assertThat(code).isZero();
        assertThat(out.toString())
                .contains(
                        "--bootstrap-servers",
                        "--config",
                        "--profile",
                        "--anchor-kernel",
                        "--num-layers",
                        "--application-id",
                        "--state-dir",
                        "--metrics-port",
                        "--idle-timeout",
                        "--commit-interval",
                        "--streams-property",
                        "--service-request-timeout",
                        "--service-model-config",
                        "--service-kv-total-blocks");
    }

    @Test
    void an_invalid_value_is_a_usage_error_not_a_stack_trace() {
        StringWriter err = new StringWriter();
        int code = new CommandLine(new StreamsCommand())
                .setErr(new PrintWriter(err))
                .execute("--idle-timeout", "soon");
        assertThat(code).isEqualTo(2);
        assertThat(err.toString()).contains("'soon' is not a duration");
    }

    @ParameterizedTest
    @CsvSource({"500ms,PT0.5S", "60s,PT1M", "5m,PT5M", "1h,PT1H", "PT90S,PT1M30S", "pt2m,PT2M"})
    void durations_read_like_people_write_them(String text, String iso) {
        assertThat(new DurationConverter().convert(text)).isEqualTo(Duration.parse(iso));
    }
}
