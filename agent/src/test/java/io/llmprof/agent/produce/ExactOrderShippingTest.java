package io.llmprof.agent.produce;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.agent.kineto.Fixtures;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReadSummary;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.RecordingSink;
import io.llmprof.agent.sequence.MemoryBudget;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What `agent replay` and `watch` read by default ({@link ReaderOptions#shipping()}): every lane in exact start order
 * whatever the file's, the lanes interleaved by time, with nothing late however far out of order the file is (as
 * vLLM's graph-capture traces write their runtime launches after all their cpu_ops), and the sort's memory and temp
 * directory given back after a read, also one that failed.
 */
class ExactOrderShippingTest {
    @TempDir
    Path dir;

    private Path launchesWrittenLast() throws IOException {
        return Fixtures.write(dir, "rank0.json", Fixtures.launchesWrittenLast(300));
    }

    private static Set<Path> sortDirs() throws IOException {
        try (Stream<Path> tmp = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
            return tmp.filter(p -> p.getFileName().toString().startsWith("llmprof-sort-"))
                    .collect(Collectors.toSet());
        }
    }

    @Test
    void launchesWrittenFarBehindTheirCpuOpsComeInPlaceAndTheLanesInterleavedByTime() throws IOException {
        Path trace = launchesWrittenLast();
        // a window of 16 that the file's order is far beyond
        ReaderOptions shipping = ReaderOptions.shipping().withReorderWindow(16);
        Set<Path> dirsBefore = sortDirs();
        long budgetBefore = MemoryBudget.JVM.used();

        RecordingSink asRead = new RecordingSink();
        ReadSummary late = TraceReaders.read(trace, shipping.withExactOrder(false), asRead);
        // as read: the host lane, quiet through the kernels, has let its window out; every launch but the last
        // started before the last cpu_op already sent
        assertThat(late.outOfOrder()).as("as read, within the window").isEqualTo(299);

        RecordingSink exact = new RecordingSink();
        ReadSummary summary = TraceReaders.read(trace, shipping, exact);

        assertThat(summary.outOfOrder()).isZero();
        assertThat(summary.problems()).isEmpty();
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            expected.add("HOST op" + i);
            expected.add("HOST cudaLaunchKernel");
        }
        for (int i = 0; i < 300; i++) {
            expected.add("GPU k" + i);
        }
        assertThat(exact.events.stream()
                        .map(d -> d.lane() + " " + d.event().name())
                        .toList())
                .containsExactlyElementsOf(expected);
        List<Long> hostStarts =
                exact.lane("0", Lane.HOST).stream().map(TraceEvent::startNs).toList();
        assertThat(hostStarts).isSorted();
        assertThat(exact.ends).containsExactly("0/HOST", "0/GPU");
        assertThat(MemoryBudget.JVM.used()).as("the sort's memory given back").isEqualTo(budgetBefore);
        assertThat(sortDirs()).as("its temp directory deleted").isEqualTo(dirsBefore);
    }

    @Test
    void aReadThatFailsInTheSinkGivesTheSortsMemoryAndDirectoryBack() throws IOException {
        Path trace = launchesWrittenLast();
        Set<Path> dirsBefore = sortDirs();
        long budgetBefore = MemoryBudget.JVM.used();
        OrderedSink failing = new OrderedSink() {
            @Override
            public void event(String rank, Lane lane, long index, TraceEvent event) {
                if (index == 10) {
                    throw new IllegalStateException("the producer is gone");
                }
            }

            @Override
            public void endOfTrace(String rank, Lane lane) {}
        };

        assertThatThrownBy(
                        () -> TraceReaders.read(trace, ReaderOptions.shipping().withReorderWindow(16), failing))
                .hasMessageContaining("the producer is gone");

        assertThat(MemoryBudget.JVM.used()).isEqualTo(budgetBefore);
        assertThat(sortDirs()).isEqualTo(dirsBefore);
    }

    /**
     * The byte-level walk gives up at an escaped name near the end, after its sorted lanes set runs aside; the file is
     * read again by the Jackson walk. The first reading's runs give their memory back, and the second's order is the
     * exact one.
     */
    @Test
    void aReadingTheFastWalkGivesUpOnGivesBackWhatItsSortHeld() throws IOException {
        String escaped = Fixtures.kernel("late\\u00e9", "20000", "5", 999);
        Path plain = launchesWrittenLast();
        String json = Files.readString(plain);
        Path trace = Fixtures.write(dir, "escaped.json", json.substring(0, json.length() - 2) + "," + escaped + "]}");
        long budgetBefore = MemoryBudget.JVM.used();

        RecordingSink exact = new RecordingSink();
        ReadSummary summary = TraceReaders.read(trace, ReaderOptions.shipping().withReorderWindow(16), exact);

        assertThat(summary.outOfOrder()).isZero();
        assertThat(exact.names("0", Lane.GPU)).hasSize(301).endsWith("late\u00e9");
        assertThat(exact.lane("0", Lane.HOST).stream().map(TraceEvent::startNs).toList())
                .isSorted();
        assertThat(MemoryBudget.JVM.used()).isEqualTo(budgetBefore);
    }
}
