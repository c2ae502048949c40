package io.llmprof.events;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class LastBoxTest {
    @Test
    void aRunOfEqualValuesSharesOneBoxAndAnotherValueGetsItsOwn() {
        LastBox boxes = new LastBox();
        Long first = boxes.of(10_000L);
        assertThat(boxes.of(10_000L)).isSameAs(first);
        Long other = boxes.of(10_001L);
        assertThat(other).isEqualTo(10_001L).isNotSameAs(first);
        assertThat(boxes.of(10_000L)).isEqualTo(10_000L).isNotSameAs(other);
        assertThat(boxes.of(0L)).isZero();
    }
}
