package io.llmprof.dashboard.metrics;

import static io.llmprof.dashboard.Fixtures.hardware;
import static io.llmprof.dashboard.Fixtures.pass;
import static io.llmprof.dashboard.HostFixtures.verdict;
import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.dashboard.ServiceFixtures;
import io.llmprof.events.metrics.BoundedTagValues;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestStateRecord;
import io.micrometer.core.instrument.Meter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * A dashboard that runs for weeks: once its (job, rank) or (job, instance) limit is reached, a pair idle for {@link
 * BoundedTagValues#DEFAULT_IDLE} gives its place, and its series, to the next new one; pairs in use keep theirs.
 */
class SeriesRecyclingTest {
    private static final Duration IDLE = BoundedTagValues.DEFAULT_IDLE;

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final AtomicLong now = new AtomicLong(5_000);

    private DashboardMeters meters(int maxRankTags) {
        return new DashboardMeters(registry, maxRankTags, now::get);
    }

    private void advance(Duration d) {
        now.addAndGet(d.toNanos());
    }

    /** Meters of the registry that carry this job and rank. */
    private List<Meter> ofRank(String job, String rank) {
        return registry.getMeters().stream()
                .filter(m -> job.equals(m.getId().getTag("job"))
                        && rank.equals(m.getId().getTag("rank")))
                .toList();
    }

    @Test
    void anIdleRankGivesItsPlaceAndEverySeriesOfItToANewJob() {
        DashboardMeters m = meters(2);
        m.passClosed(pass("old", "0", 0));
        m.hostVerdict(verdict("old", "r", "0", "all"));
        m.hostStraggler("old", "0", () -> 0);
        m.rankHardware(hardware("old", "0", 0));
        m.passClosed(pass("busy", "0", 0));
        assertThat(ofRank("old", "0"))
                .extracting(x -> x.getId().getName())
                .contains(
                        DashboardMeters.PASS_WALL,
                        DashboardMeters.HOST_VERDICT,
                        DashboardMeters.HOST_GPU_IDLE_RATIO,
                        DashboardMeters.HOST_KERNEL_GAPS,
                        DashboardMeters.HOST_STRAGGLER,
                        DashboardMeters.RANK_HARDWARE_INFO);

        // the limit is reached and nothing is idle long enough: the new job shares other
        advance(IDLE.minusSeconds(1));
        m.passClosed(pass("busy", "0", 1));
        m.passClosed(pass("new", "0", 0));
        assertThat(registry.scrape()).contains("job=\"other\"").doesNotContain("job=\"new\"");

        // that look counted old's last uses; IDLE later, with busy in use, old goes, all of it
        advance(IDLE);
        m.passClosed(pass("busy", "0", 2));
        m.passClosed(pass("new", "0", 1));
        assertThat(ofRank("old", "0")).isEmpty();
        assertThat(registry.scrape())
                .contains("llmprof_pass_wall_seconds_count{job=\"new\",phase=\"all\",rank=\"0\",steady=\"true\"} 1")
                .contains("llmprof_pass_wall_seconds_count{job=\"busy\",phase=\"all\",rank=\"0\",steady=\"true\"} 3")
                .doesNotContain("job=\"old\"");
        // the host gauges of a new verdict for the new rank are its own
        m.hostVerdict(verdict("new", "r", "0", "all"));
        assertThat(ofRank("new", "0")).extracting(x -> x.getId().getName()).contains(DashboardMeters.HOST_VERDICT);
    }

    @Test
    void aRetiredRankAdmittedAgainStartsAfreshAndGetsItsHardwareSeriesBack() {
        DashboardMeters m = meters(1);
        m.rankHardware(hardware("a", "0", 0));
        m.passClosed(pass("a", "0", 0));
        m.hostVerdict(verdict("a", "r", "0", "all"));
        idleThenAdmit(m, "b", 0);
        assertThat(ofRank("a", "0")).isEmpty();
        assertThat(m.hardwareSeriesCount()).isZero();

        idleThenAdmit(m, "a", 1);
        assertThat(ofRank("b", "0")).isEmpty();
        assertThat(registry.scrape())
                .contains("llmprof_pass_wall_seconds_count{job=\"a\",phase=\"all\",rank=\"0\",steady=\"true\"} 1")
                .contains("llmprof_rank_hardware_info{ep=\"unknown\",gpu=\"NVIDIA H100 80GB HBM3\",job=\"a\","
                        + "rank=\"0\",tp=\"2\",world_size=\"2\"} 1");
        // host gauges come back with the next verdict (a gauge of the retired one would read the old holder)
        m.hostVerdict(verdict("a", "r", "0", "all"));
        assertThat(registry.scrape())
                .containsPattern(
                        "llmprof_host_verdict\\{job=\"a\",kind=\"llmprof\",phase=\"all\"," + "rank=\"0\"} -?[01]\\.0");

        // a record removed while its rank was retired does not come back
        idleThenAdmit(m, "b", 1);
        m.rankHardwareRemoved("a/0");
        idleThenAdmit(m, "a", 2);
        assertThat(m.hardwareSeriesCount()).isZero();
    }

    /**
     * Idle times with no use of the one admitted rank until {@code job}'s rank 0 takes its place: at most two (a first
     * look at the occupant may count uses it had since the last look), after which pass {@code index} of the new
     * rank is timed.
     */
    private void idleThenAdmit(DashboardMeters m, String job, int index) {
        for (int look = 0; look < 2 && ofRank(job, "0").isEmpty(); look++) {
            advance(IDLE);
            m.passClosed(pass(job, "0", index));
        }
        assertThat(ofRank(job, "0")).isNotEmpty();
    }

    @Test
    void anIdleServiceInstanceGivesItsPlaceAndItsGaugesToANewOne() {
        DashboardMeters m = meters(1);
        RequestRecord r = ServiceFixtures.requests().get(0); // llama/i0
        m.serviceRequest(r);
        m.serviceStates(new RequestStateRecord("llama", "i0", 2, 1, 9, 0, Map.of()));
        m.serviceKvUsage("llama", "i0", 0.5);

        advance(IDLE.minusSeconds(1));
        m.serviceRequest(ServiceFixtures.withInstance(r, "i1"));
        assertThat(registry.scrape()).contains("instance=\"other\"").doesNotContain("instance=\"i1\"");

        // that look counted i0's last uses; IDLE later i0 is idle
        advance(IDLE);
        m.serviceRequest(ServiceFixtures.withInstance(r, "i1"));
        m.serviceStates(new RequestStateRecord("llama", "i1", 1, 0, 1, 0, Map.of()));
        String scrape = registry.scrape();
        assertThat(scrape)
                .doesNotContain("instance=\"i0\"")
                .contains("llmprof_service_requests_finished_total{instance=\"i1\",job=\"llama\",reason=\"stop\"} 1")
                .contains("llmprof_service_requests_running{instance=\"i1\",job=\"llama\"} 1.0");
        assertThat(m.serviceSeriesCount()).isOne();

        // i0 again, later: its series start afresh, its gauges read its new values
        advance(IDLE);
        m.serviceStates(new RequestStateRecord("llama", "i0", 1, 0, 5, 0, Map.of()));
        assertThat(registry.scrape()).doesNotContain("instance=\"i0\"");
        advance(IDLE);
        m.serviceStates(new RequestStateRecord("llama", "i0", 1, 0, 7, 0, Map.of()));
        assertThat(registry.scrape())
                .doesNotContain("instance=\"i1\"")
                .contains("llmprof_service_requests_running{instance=\"i0\",job=\"llama\"} 7.0");
    }

    @Test
    void aServiceInstanceInUseIsNeverPushedOut() {
        DashboardMeters m = meters(1);
        RequestRecord r = ServiceFixtures.requests().get(0);
        for (int minute = 0; minute < 60; minute++) {
            m.serviceRequest(r);
            m.serviceRequest(ServiceFixtures.withInstance(r, "i" + (minute + 1)));
            advance(Duration.ofMinutes(1));
        }
        assertThat(registry.scrape())
                .contains("llmprof_service_requests_finished_total{instance=\"i0\",job=\"llama\",reason=\"stop\"} 60")
                .contains(
                        "llmprof_service_requests_finished_total{instance=\"other\",job=\"other\",reason=\"stop\"} 60");
    }

    @Test
    void pairsWhoseKeysCollideShareTheirPlaceAndLeaveTogether() {
        DashboardMeters m = meters(1);
        m.passClosed(pass("a/b", "c", 0));
        m.passClosed(pass("a", "b/c", 0)); // the same key, a/b/c: admitted with it
        RequestRecord r = ServiceFixtures.requests().get(0);
        assertThat(ofRank("a/b", "c")).isNotEmpty();
        assertThat(ofRank("a", "b/c")).isNotEmpty();

        for (int look = 0; look < 2 && ofRank("new", "0").isEmpty(); look++) {
            advance(IDLE);
            m.passClosed(pass("new", "0", 0));
        }
        assertThat(ofRank("new", "0")).isNotEmpty();
        assertThat(ofRank("a/b", "c")).isEmpty();
        assertThat(ofRank("a", "b/c")).isEmpty();

        // the same for service pairs
        m.serviceRequest(ServiceFixtures.withInstance(withJob(r, "x/y"), "z"));
        m.serviceRequest(ServiceFixtures.withInstance(withJob(r, "x"), "y/z"));
        assertThat(m.serviceSeriesCount()).isEqualTo(2);
        for (int look = 0; look < 2 && m.serviceSeriesCount() > 1; look++) {
            advance(IDLE);
            m.serviceRequest(ServiceFixtures.withInstance(withJob(r, "new"), "i"));
        }
        assertThat(m.serviceSeriesCount()).isOne();
        assertThat(registry.scrape()).doesNotContain("job=\"x/y\"").doesNotContain("job=\"x\"");
    }

    private static RequestRecord withJob(RequestRecord r, String job) {
        return ServiceFixtures.with(r, job, r.instance(), r.rid(), r.aliases());
    }

    @Test
    void anUnmarkedBaselineFreesItsJobsPlace() {
        DashboardMeters m = meters(1);
        m.hostRegression("a", metric -> 1.5, List.of("step_duration"));
        m.hostRegression("b", metric -> 2.0, List.of("step_duration"));
        assertThat(registry.scrape()).contains("job=\"a\"").doesNotContain("job=\"b\"");

        m.hostRegression("a", null, List.of());
        m.hostRegression("b", metric -> 2.0, List.of("step_duration"));
        assertThat(registry.scrape())
                .doesNotContain("job=\"a\"")
                .contains("llmprof_host_regression_ratio{job=\"b\",metric=\"step_duration\"} 2.0");
    }
}
