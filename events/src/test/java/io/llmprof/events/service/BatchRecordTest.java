package io.llmprof.events.service;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class BatchRecordTest {
    @Test
    void withRidsReplacesOnlyTheIds() {
        // Every component distinct (the two Integers, the three Longs), so a swapped or dropped one shows.
        BatchRecord b = new BatchRecord(
                "job",
                "i0",
                "modelExec",
                BatchRecord.EXECUTE,
                7L,
                "1",
                100L,
                20L,
                "mixed",
                5,
                3,
                2,
                40L,
                9L,
                0.5,
                List.of("a", "b", "c"));

        assertThat(b.withRids(List.of("a")))
                .isEqualTo(new BatchRecord(
                        "job",
                        "i0",
                        "modelExec",
                        BatchRecord.EXECUTE,
                        7L,
                        "1",
                        100L,
                        20L,
                        "mixed",
                        5,
                        3,
                        2,
                        40L,
                        9L,
                        0.5,
                        List.of("a")));
    }
}
