package io.llmprof.streams.service.export;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The profiler.db curves and the cell formatting every export column goes through. */
class LatencyCurveTest {
    static final long T = 1_727_940_490_718_339_000L;

    @ParameterizedTest(name = "point after request {0}: {1}")
    @CsvSource({
        "1, true",
        "99, true",
        "100, true",
        "101, false",
        "110, true",
        "999, false",
        "1000, true",
        "1001, false",
        "1100, true",
        "9900, true",
        "10000, true",
        "10010, false",
        "10100, false",
        "11000, true",
        "100000, true",
        "100100, false"
    })
    void pointsThinOutByDecade(long n, boolean due) {
        assertThat(LatencyCurve.due(n)).isEqualTo(due);
    }

    @Test
    void percentilesInterpolateLinearlyLikeNumpy() {
        double[] v = {1, 2, 3, 4};
        // positions (n-1) * p: 1.5 -> 2.5; 2.7 -> 3.7; 2.97 -> 3.97
        assertThat(LatencyCurve.percentile(v, 50)).isEqualTo(2.5);
        assertThat(LatencyCurve.percentile(v, 90)).isCloseTo(3.7, within(1e-12));
        assertThat(LatencyCurve.percentile(v, 99)).isCloseTo(3.97, within(1e-12));
        assertThat(LatencyCurve.percentile(new double[] {7}, 99)).isEqualTo(7);
    }

    @Test
    void eachPointSummarizesEveryValueSoFar() {
        LatencyCurve c = new LatencyCurve(ExportTable.REQ_LATENCY);
        c.add(T + 2, 30);
        c.add(T, 10);
        List<Object> row = c.add(T + 1, 20);
        // values 10, 20, 30: mean 20; p99 at position 1.98 -> 29.8; p90 at 1.8 -> 28; p50 20; time = latest seen
        assertThat(Cells.text(row.get(0))).isEqualTo("2024-10-03 07:28:10:718339");
        assertThat((double) row.get(1)).isEqualTo(20.0);
        assertThat((double) row.get(2)).isCloseTo(29.8, within(1e-12));
        assertThat((double) row.get(3)).isCloseTo(28.0, within(1e-12));
        assertThat((double) row.get(4)).isEqualTo(20.0);
        assertThat(row.get(5)).isEqualTo(3L);
        assertThat(c.last()).isNull(); // the third value was already a point
        assertThat(c.add(T, Double.NaN)).isNull(); // not a value: ignored, not counted
    }

    @Test
    void beyondCapacityTheMeanStaysExactAndALastPointIsGiven() {
        LatencyCurve c = new LatencyCurve(ExportTable.REQ_LATENCY, 4);
        for (int i = 1; i <= 101; i++) {
            c.add(T + i, i);
        }
        List<Object> last = c.last();
        assertThat(last).isNotNull();
        assertThat((double) last.get(1)).isEqualTo(51.0); // (1 + ... + 101) / 101 from the exact running sum
        assertThat(last.get(5)).isEqualTo(101L);
        assertThat((double) last.get(4)).isBetween(1.0, 101.0); // p50 of a 4-value sample
        assertThat(c.last()).isNull();
    }

    @Test
    void cellsAreWrittenInTheHeadersUnit() {
        assertThat(Cells.text(Cells.ms(1_500_000L))).isEqualTo("1.5");
        assertThat(Cells.text(Cells.ms(-1_500_000L))).isEqualTo("-1.5"); // an overlap stays negative
        assertThat(Cells.text(Cells.ms(0L))).isEqualTo("0");
        assertThat(Cells.text(Cells.ms(1L))).isEqualTo("0.000001");
        assertThat(Cells.text(Cells.ms(20_868_655.2208))).isEqualTo("20.868655");
        assertThat(Cells.text(new Cells.Us(26_327_550))).isEqualTo("26327.55");
        assertThat(Cells.sql(Cells.ms(1_500_000L))).isEqualTo(1.5);
        assertThat(Cells.text(Cells.dateTimeMillis(T + 999_999))).isEqualTo("2024-10-03 07:28:10:719");
        assertThat(Cells.text(Cells.dateTime(T + 999))).isEqualTo("2024-10-03 07:28:10:718339"); // truncated
        assertThat(Cells.text(Double.NaN)).isEmpty();
        assertThat(Cells.text(null)).isEmpty();
        assertThat(Cells.sql(null)).isNull();
        assertThat(CsvTable.quote("a,b")).isEqualTo("\"a,b\"");
        assertThat(CsvTable.quote("say \"hi\"")).isEqualTo("\"say \"\"hi\"\"\"");
    }
}
