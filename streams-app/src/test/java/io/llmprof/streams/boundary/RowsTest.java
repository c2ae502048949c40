package io.llmprof.streams.boundary;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class RowsTest {
    private static long[] row(long start, long dur) {
        return new long[] {start, dur, 0, 0, Rows.KERNEL, 0};
    }

    /** The union of the rows' intervals, in start order or not (late events come out of order). */
    @Test
    void busyIsTheUnionOfTheIntervalsWhateverTheirOrder() {
        List<long[]> rows = List.of(row(0, 10), row(5, 10), row(20, 5), row(22, 1), row(30, 0));
        assertThat(Rows.busy(rows)).isEqualTo(15 + 5);
        Random rnd = new Random(7);
        for (int round = 0; round < 200; round++) {
            List<long[]> shuffled = new ArrayList<>();
            boolean[] covered = new boolean[400];
            for (int i = 0; i < 1 + rnd.nextInt(20); i++) {
                int start = rnd.nextInt(300);
                int dur = rnd.nextInt(60);
                shuffled.add(row(start, dur));
                for (int t = start; t < start + dur; t++) {
                    covered[t] = true;
                }
            }
            if (round % 2 == 0) {
                Collections.shuffle(shuffled, rnd);
            } else {
                shuffled.sort((a, b) -> Long.compare(a[Rows.START], b[Rows.START]));
            }
            long expected = 0;
            for (boolean c : covered) {
                expected += c ? 1 : 0;
            }
            assertThat(Rows.busy(shuffled)).as("round %d", round).isEqualTo(expected);
        }
    }
}
