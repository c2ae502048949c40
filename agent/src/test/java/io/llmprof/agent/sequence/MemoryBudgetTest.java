package io.llmprof.agent.sequence;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class MemoryBudgetTest {
    @Test
    void theJvmWideBudgetIsAnEighthOfTheHeapBetween48And256MiB() {
        assertThat(MemoryBudget.defaultFor(256L << 20)).as("analyze's heap").isEqualTo(48L << 20);
        assertThat(MemoryBudget.defaultFor(1L << 30)).isEqualTo(128L << 20);
        assertThat(MemoryBudget.defaultFor(2L << 30)).as("the agent's heap").isEqualTo(256L << 20);
        assertThat(MemoryBudget.defaultFor(16L << 30)).isEqualTo(256L << 20);
    }

    @Test
    void reservesOnlyWhatFitsAndTakesBackWhatIsReleased() {
        MemoryBudget budget = new MemoryBudget(100);
        assertThat(budget.tryReserve(60)).isTrue();
        assertThat(budget.tryReserve(50)).isFalse();
        assertThat(budget.used()).isEqualTo(60);
        budget.release(60);
        assertThat(budget.tryReserve(100)).isTrue();
        assertThat(budget.used()).isEqualTo(100);
    }
}
