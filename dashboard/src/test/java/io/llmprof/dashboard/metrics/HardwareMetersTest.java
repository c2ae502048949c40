package io.llmprof.dashboard.metrics;

import static io.llmprof.dashboard.Fixtures.hardware;
import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.dashboard.Fixtures;
import io.llmprof.events.RankHardware;
import io.llmprof.events.view.HardwareView;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Tag;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@value DashboardMeters#RANK_HARDWARE_INFO}: one series per rank with a current hardware record, bounded. */
class HardwareMetersTest {
    private static final String H100 = "NVIDIA H100 80GB HBM3";

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final DashboardMeters meters = new DashboardMeters(registry, 8);

    @Test
    void rendersOneInfoSeriesPerRankWithItsGpuAndParallelism() {
        // Fixtures.view: an H100, world size 2, TP 2 from a process group, EP not stated.
        meters.rankHardware(hardware("llama", "0", 0));
        meters.rankHardware(hardware("llama", "1", 1));

        assertThat(registry.scrape())
                .contains("# TYPE llmprof_rank_hardware_info gauge")
                .contains("llmprof_rank_hardware_info{ep=\"unknown\",gpu=\"" + H100
                        + "\",job=\"llama\",rank=\"0\",tp=\"2\",world_size=\"2\"} 1")
                .contains("llmprof_rank_hardware_info{ep=\"unknown\",gpu=\"" + H100
                        + "\",job=\"llama\",rank=\"1\",tp=\"2\",world_size=\"2\"} 1");
        assertThat(meters.hardwareSeriesCount()).isEqualTo(2);
    }

    @Test
    void aRecordWithOtherValuesReplacesTheRanksSeries() {
        meters.rankHardware(hardware("llama", "0", 0));
        meters.rankHardware(hardware("llama", "1", 1));

        meters.rankHardware(record("llama", "0", "NVIDIA A100-SXM4-80GB", 8, 4, 16));

        assertThat(seriesOf("llama", "0")).singleElement().satisfies(g -> assertThat(
                        g.getId().getTags())
                .contains(
                        Tag.of("gpu", "NVIDIA A100-SXM4-80GB"),
                        Tag.of("tp", "8"),
                        Tag.of("ep", "4"),
                        Tag.of("world_size", "16")));
        assertThat(registry.scrape()).doesNotContain("rank=\"0\",tp=\"2\"");
        // the other rank keeps its own
        assertThat(seriesOf("llama", "1"))
                .singleElement()
                .satisfies(g -> assertThat(g.getId().getTag("gpu")).isEqualTo(H100));
    }

    @Test
    void aRecordWithTheSameValuesKeepsTheSeries() {
        meters.rankHardware(hardware("llama", "0", 0));
        Gauge first = seriesOf("llama", "0").get(0);

        // another device and source, same tag values: nothing to change
        meters.rankHardware(hardware("llama", "0", 5));

        assertThat(seriesOf("llama", "0")).singleElement().isSameAs(first);
    }

    @Test
    void aRemovedRecordTakesItsSeriesAlongAndOnlyThatOne() {
        meters.rankHardware(hardware("llama", "0", 0));
        meters.rankHardware(hardware("llama", "1", 1));

        meters.rankHardwareRemoved("llama/0");
        meters.rankHardwareRemoved("llama/never-seen");

        assertThat(seriesOf("llama", "0")).isEmpty();
        assertThat(seriesOf("llama", "1")).hasSize(1);
        assertThat(meters.hardwareSeriesCount()).isOne();
        assertThat(registry.scrape()).doesNotContain("rank=\"0\"");
    }

    @Test
    void aRankWhoseRecordCameBackGetsItsSeriesBack() {
        meters.rankHardware(hardware("llama", "0", 0));
        meters.rankHardwareRemoved("llama/0");

        meters.rankHardware(record("llama", "0", "NVIDIA L4", null, null, 1));

        assertThat(seriesOf("llama", "0"))
                .singleElement()
                .satisfies(g -> assertThat(g.getId().getTag("gpu")).isEqualTo("NVIDIA L4"));
    }

    @Test
    void whatTheTraceDoesNotSayIsUnknown() {
        meters.rankHardware(record("llama", "0", null, null, null, null));
        meters.rankHardware(record("llama", "1", "  ", null, 2, null));

        assertThat(registry.scrape())
                .contains("llmprof_rank_hardware_info{ep=\"unknown\",gpu=\"unknown\",job=\"llama\",rank=\"0\","
                        + "tp=\"unknown\",world_size=\"unknown\"} 1")
                .contains("llmprof_rank_hardware_info{ep=\"2\",gpu=\"unknown\",job=\"llama\",rank=\"1\","
                        + "tp=\"unknown\",world_size=\"unknown\"} 1");
    }

    @Test
    void cutsALongGpuNameTo128Characters() {
        String name = "G".repeat(127) + "\uD83D\uDE80" + "x".repeat(300); // a surrogate pair across the cut
        meters.rankHardware(record("llama", "0", "N".repeat(500), 2, null, 2));
        meters.rankHardware(record("llama", "1", name, 2, null, 2));

        assertThat(seriesOf("llama", "0").get(0).getId().getTag("gpu")).isEqualTo("N".repeat(128));
        assertThat(seriesOf("llama", "1").get(0).getId().getTag("gpu")).isEqualTo("G".repeat(127));
    }

    @Test
    void ranksBeyondTheRankLimitGetNoSeriesAndNoneIsOther() {
        DashboardMeters few = new DashboardMeters(registry, 2);
        few.rankHardware(hardware("a", "0", 0));
        few.rankHardware(hardware("a", "1", 1));
        few.rankHardware(hardware("b", "0", 0));
        few.rankHardware(hardware("a", "0", 3)); // admitted already: still its own

        assertThat(registry.find(DashboardMeters.RANK_HARDWARE_INFO).gauges()).hasSize(2);
        assertThat(few.hardwareSeriesCount()).isEqualTo(2);
        assertThat(registry.scrape()).doesNotContain("job=\"b\"").doesNotContain("\"other\"");
    }

    @Test
    void sharesTheRankLimitWithThePassWallSeries() {
        DashboardMeters few = new DashboardMeters(registry, 1);
        few.passClosed(Fixtures.pass("a", "0", 0)); // takes the one (job, rank) pair

        few.rankHardware(hardware("b", "0", 0));
        few.rankHardware(hardware("a", "0", 0));

        assertThat(registry.find(DashboardMeters.RANK_HARDWARE_INFO).gauges())
                .singleElement()
                .satisfies(g -> assertThat(g.getId().getTag("job")).isEqualTo("a"));
    }

    private List<Gauge> seriesOf(String job, String rank) {
        return List.copyOf(registry.find(DashboardMeters.RANK_HARDWARE_INFO)
                .tags("job", job, "rank", rank)
                .gauges());
    }

    private static RankHardware record(String job, String rank, String gpu, Integer tp, Integer ep, Integer world) {
        HardwareView v = Fixtures.view(0);
        return new RankHardware(
                job,
                "run-1",
                rank,
                "/traces/rank" + rank + ".json",
                new HardwareView(
                        v.device(),
                        gpu,
                        gpu == null ? "no deviceProperties in the trace" : null,
                        v.sms(),
                        v.memoryBytes(),
                        v.computeCapability(),
                        v.devicesListed(),
                        v.backend(),
                        v.traceRank(),
                        world,
                        tp,
                        v.tpSource(),
                        ep,
                        v.epSource(),
                        v.processGroups()));
    }
}
