package io.llmprof.events.host;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class HostAssessmentTest {
    /** steps, window, busy, launch, launch calls, api calls, prep, exposed, comm, kernels, graph kernels, memops. */
    private static HostSums sums(long busy, long kernels, long memops) {
        return new HostSums(10, 1_000_000, busy, 400_000, 100, 100, 500_000, 300_000, 0, kernels, 0, memops);
    }

    @Test
    void aWindowWithoutAnyGpuActivityIsInconclusiveNeverYes() {
        // a truncated trace: launches and host prep in every window, not one kernel read
        HostAssessment a = HostAssessment.assess(sums(0, 0, 0), HostThresholds.AGGREGATE);

        assertThat(a.metrics().gpuIdleRatio()).isNull();
        assertThat(a.metrics().gpuUtilization()).isNull();
        assertThat(a.metrics().launchOverheadRatio()).isEqualTo(0.4);
        assertThat(a.verdict()).isEqualTo(HostAssessment.INCONCLUSIVE);
        assertThat(a.llmprofVerdict()).isEqualTo(HostAssessment.INCONCLUSIVE);
    }

    @Test
    void theSameWindowWithGpuActivityGetsAVerdict() {
        HostAssessment a = HostAssessment.assess(sums(200_000, 50, 0), HostThresholds.AGGREGATE);

        assertThat(a.metrics().gpuIdleRatio()).isEqualTo(0.8);
        assertThat(a.verdict()).isEqualTo(HostAssessment.YES);
        assertThat(a.llmprofVerdict()).isEqualTo(HostAssessment.YES);
    }

    @Test
    void memcpyAloneIsGpuActivity() {
        HostAssessment a = HostAssessment.assess(sums(100_000, 0, 4), HostThresholds.AGGREGATE);

        assertThat(a.metrics().gpuUtilization()).isEqualTo(0.1);
        assertThat(a.verdict()).isNotEqualTo(HostAssessment.INCONCLUSIVE);
    }
}
