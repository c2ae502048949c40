package io.llmprof.events;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class ImmutableListsTest {
    @Test
    void the_first_n_elements_become_an_immutable_list_that_list_copy_of_keeps_as_it_is() {
        String[] a = new String[40];
        for (int i = 0; i < a.length; i++) {
            a[i] = "r" + i;
        }
        for (int n = 0; n <= a.length; n++) {
            List<String> list = ImmutableLists.firstN(a, n);
            assertThat(list).as("n = %d", n).isEqualTo(Arrays.asList(a).subList(0, n));
            assertThat(List.copyOf(list)).as("n = %d", n).isSameAs(list);
            assertThatThrownBy(() -> list.add("x")).isInstanceOf(UnsupportedOperationException.class);
        }
        // the scratch space is reused for the next list: an earlier list must not see that
        List<String> ten = ImmutableLists.firstN(a, 10);
        List<String> twelve = ImmutableLists.firstN(a, 12);
        Arrays.fill(a, null);
        assertThat(ten)
                .containsExactlyElementsOf(twelve.subList(0, 10))
                .startsWith("r0")
                .endsWith("r9");
        assertThat(twelve).endsWith("r11");
    }
}
