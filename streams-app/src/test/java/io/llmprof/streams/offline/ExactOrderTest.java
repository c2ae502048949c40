package io.llmprof.streams.offline;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.ReaderOptions;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The reader options of the offline readings: every analyze command reads through {@link ExactOrder}. */
class ExactOrderTest {
    @Test
    void bothReadingsAndLaterOnesSplitALargeFileAcrossTwoThreads() throws Exception {
        List<ReaderOptions> seen = new ArrayList<>();
        try (ExactOrder order = new ExactOrder()) {
            String result = order.read(ReaderOptions.defaults(), options -> {
                seen.add(options);
                order.sortedIf(seen.size() == 1 ? 1 : 0); // the first reading asks for the sorted one
                return "done";
            });
            assertThat(result).isEqualTo("done");
            assertThat(seen).hasSize(2);
            assertThat(seen.get(0).splitRead()).isTrue();
            assertThat(seen.get(0).abortOnLate()).isTrue();
            assertThat(seen.get(1).splitRead()).isTrue();
            assertThat(seen.get(1).spillDir()).isNotNull();
            ReaderOptions later = order.options(ReaderOptions.defaults());
            assertThat(later.splitRead()).isTrue();
            assertThat(later.spillDir()).isEqualTo(seen.get(1).spillDir());
        }
    }
}
