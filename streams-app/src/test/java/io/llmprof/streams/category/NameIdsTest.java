package io.llmprof.streams.category;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class NameIdsTest {
    @Test
    void numbersNamesInTheOrderFirstSeenAndStartsAgainWhenCleared() {
        NameIds ids = new NameIds();
        assertThat(ids.id("gemm")).isZero();
        assertThat(ids.id("attention")).isEqualTo(1);
        assertThat(ids.id("gemm")).isZero(); // seen: the same id, nothing added
        List<String> names = ids.names();
        assertThat(names).containsExactly("gemm", "attention");
        assertThat(ids.name(1)).isEqualTo("attention");
        assertThat(ids.id("moe")).isEqualTo(2);
        assertThat(names).containsExactly("gemm", "attention", "moe"); // a view: it follows
        assertThatThrownBy(() -> names.add("x")).isInstanceOf(UnsupportedOperationException.class);
        ids.clear();
        assertThat(ids.size()).isZero();
        assertThat(ids.id("attention")).isZero();
    }
}
