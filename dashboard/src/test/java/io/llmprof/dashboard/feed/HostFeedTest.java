package io.llmprof.dashboard.feed;

import static io.llmprof.dashboard.HostFixtures.twoRuns;
import static io.llmprof.dashboard.HostFixtures.verdict;
import static io.llmprof.dashboard.feed.FeedHandlerTest.raw;
import static io.llmprof.dashboard.feed.FeedHandlerTest.record;
import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.dashboard.store.HostStore;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.dashboard.store.StoreLimits;
import io.llmprof.events.Topics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class HostFeedTest {
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final HostStore host = new HostStore(8, 4);
    private final FeedHandler handler =
            new FeedHandler(new PassStore(StoreLimits.defaults()), host, new DashboardMeters(registry, 8));

    @Test
    void appliesHostStepsAndVerdictsToStoreAndGauges() {
        twoRuns("llama").forEach(s -> assertThat(handler.handle(record(Topics.HOST_STEPS, s)))
                .isTrue());
        assertThat(handler.handle(record(Topics.HOST_VERDICTS, verdict("llama", "new", "0", "all"))))
                .isTrue();

        assertThat(host.runs("llama")).containsExactly("base", "new");
        assertThat(host.rank("llama/0", 5).orElseThrow().verdicts()).containsOnlyKeys("all");
        assertThat(registry.get(DashboardMeters.HOST_GPU_IDLE_RATIO).gauge().value())
                .isEqualTo(0.4);
        // Rank 1 is the straggler of the latest run ("new"), rank 0 is not.
        assertThat(registry.get(DashboardMeters.HOST_STRAGGLER)
                        .tag("rank", "1")
                        .gauge()
                        .value())
                .isEqualTo(1.0);
        assertThat(registry.get(DashboardMeters.HOST_STRAGGLER)
                        .tag("rank", "0")
                        .gauge()
                        .value())
                .isEqualTo(0.0);
    }

    @Test
    void aBaselineMarkAddsTheRegressionGaugesAndATombstoneRemovesThem() {
        twoRuns("llama").forEach(s -> handler.handle(record(Topics.HOST_STEPS, s)));

        assertThat(handler.handle(baseline("llama", "base"))).isTrue();
        assertThat(host.baseline("llama")).contains("base");
        assertThat(registry.get(DashboardMeters.HOST_REGRESSION_RATIO)
                        .tag("metric", "inter_step_gap")
                        .gauge()
                        .value())
                .isEqualTo(3.0);

        assertThat(handler.handle(baseline("llama", null))).isTrue();
        assertThat(host.baseline("llama")).isEmpty();
        assertThat(registry.find(DashboardMeters.HOST_REGRESSION_RATIO).gauges())
                .isEmpty();
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "{not json",
                "{\"job\":\"llama\",\"rank\":\"0\",\"index\":1}", // no run
                "{\"run\":\"r\",\"rank\":\"0\",\"index\":1}" // no job
            })
    void countsUnreadableHostStepsAndGoesOn(String value) {
        assertThat(handler.handle(raw(Topics.HOST_STEPS.name(), value))).isFalse();

        assertThat(badRecords(Topics.HOST_STEPS.name())).isEqualTo(1);
        assertThat(host.runs("llama")).isEmpty();
    }

    @Test
    void countsVerdictsOfAnUnknownPhaseAndBlankBaselineMarksAsUnreadable() {
        assertThat(handler.handle(raw(
                        Topics.HOST_VERDICTS.name(),
                        "{\"job\":\"llama\",\"run\":\"r\",\"rank\":\"0\",\"phase\":\"decode\"}")))
                .isFalse();
        assertThat(handler.handle(raw(Topics.HOST_VERDICTS.name(), null))).isFalse();
        assertThat(handler.handle(baseline("llama", " "))).isFalse();
        assertThat(handler.handle(new ConsumerRecord<>(
                        Topics.HOST_BASELINES.name(), 0, 0L, null, "run".getBytes(StandardCharsets.UTF_8))))
                .isFalse();

        // random bytes, a control character, an over-long run: no mark of llmprof's
        byte[] random = new byte[64];
        new java.util.SplittableRandom(7).nextBytes(random);
        assertThat(handler.handle(new ConsumerRecord<>(Topics.HOST_BASELINES.name(), 0, 0L, random, random)))
                .isFalse();
        assertThat(handler.handle(baseline("llama", "run\u0000x"))).isFalse();
        assertThat(handler.handle(baseline("llama", "r".repeat(FeedHandler.MAX_MARK_NAME + 1))))
                .isFalse();

        assertThat(badRecords(Topics.HOST_VERDICTS.name())).isEqualTo(2);
        assertThat(badRecords(Topics.HOST_BASELINES.name())).isEqualTo(5);
        assertThat(host.hasJob("llama")).isFalse();
    }

    static ConsumerRecord<byte[], byte[]> baseline(String job, String run) {
        return new ConsumerRecord<>(
                Topics.HOST_BASELINES.name(),
                0,
                0L,
                job.getBytes(StandardCharsets.UTF_8),
                run == null ? null : run.getBytes(StandardCharsets.UTF_8));
    }

    private double badRecords(String topic) {
        return registry.get(DashboardMeters.BAD_RECORDS)
                .tags("topic", topic)
                .counter()
                .count();
    }
}
