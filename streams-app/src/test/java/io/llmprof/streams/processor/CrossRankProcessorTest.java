package io.llmprof.streams.processor;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Locale;
import org.junit.jupiter.api.Test;

class CrossRankProcessorTest {
    @Test
    void a_pass_key_is_the_run_key_and_the_index_zero_padded_to_19_digits_as_before() {
        for (long index : new long[] {0, 7, 42, 1_000_000, 999_999_999_999L, Long.MAX_VALUE, -5, Long.MIN_VALUE}) {
            assertThat(CrossRankProcessor.passKey("job", "run-1", index))
                    .as("index %d", index)
                    .isEqualTo("job\u0000run-1\u0000" + String.format(Locale.ROOT, "%019d", index));
        }
    }

    @Test
    void pass_keys_sort_as_their_indexes() {
        assertThat(CrossRankProcessor.passKey("j", "r", 9)).isLessThan(CrossRankProcessor.passKey("j", "r", 10));
        assertThat(CrossRankProcessor.passKey("j", "r", 99_999))
                .isLessThan(CrossRankProcessor.passKey("j", "r", 100_000));
    }
}
