package io.llmprof.events.view;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class PerfettoRangeTest {
    @Test
    void rangesAreRelativeToTheTraceStartExactToTheNanosecond() {
        PerfettoRange r = PerfettoRange.of(
                "pass 0 layer 3", 1_428_625_734_966_267L, 1_428_625_735_012_001L, 1_428_625_700_000_000L, null);
        assertThat(r.startUs()).isEqualByComparingTo("34966.267");
        assertThat(r.startUs().toPlainString()).isEqualTo("34966.267");
        assertThat(r.endUs().toPlainString()).isEqualTo("35012.001");
        assertThat(r.durUs().toPlainString()).isEqualTo("45.734");
        // 34,966,267 ns and 35,012,001 ns after the trace start: the Perfetto ruler's seconds, ns exact
        assertThat(r.startS().toPlainString()).isEqualTo("0.034966267");
        assertThat(r.endS().toPlainString()).isEqualTo("0.035012001");
        assertThat(r.link()).isEqualTo("https://ui.perfetto.dev/?visStart=1428625734966267&visEnd=1428625735012001");
        assertThat(r.query())
                .isEqualTo("SELECT ts, dur, name FROM slice WHERE ts >= 1428625734966267 AND ts + dur <= "
                        + "1428625735012001 ORDER BY ts");
    }

    @Test
    void aHostedTraceUrlIsEncodedIntoTheLink() {
        PerfettoRange r = PerfettoRange.of("p", 10, 20, 0, "https://example.com/t.json.gz?x=1");
        assertThat(r.link())
                .isEqualTo("https://ui.perfetto.dev/?url=https%3A%2F%2Fexample.com%2Ft.json.gz%3Fx%3D1"
                        + "&visStart=10&visEnd=20");
    }
}
