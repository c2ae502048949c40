package io.llmprof.agent.watch;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.events.TraceBatch.Lane;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which order a file is resumed in: the one its acknowledged indexes count. */
class CheckpointOrderTest {
    private static final Map<String, Map<Lane, Long>> SOME = Map.of("0", Map.of(Lane.HOST, 100L));
    private static final ReaderOptions EXACT = ReaderOptions.shipping();

    @TempDir
    Path dir;

    @Test
    void namesTheOrderOfAReading() {
        assertThat(Checkpoint.order(EXACT)).isEqualTo("exact");
        assertThat(Checkpoint.order(EXACT.withReorderWindow(10)))
                .as("a sort's runs do not matter")
                .isEqualTo("exact");
        assertThat(Checkpoint.order(EXACT.withExactOrder(false).withReorderWindow(4096)))
                .isEqualTo("window 4096");
    }

    @Test
    void aFileNothingOfWhichWasAcknowledgedIsReadAsNowTold() {
        assertThat(Checkpoint.resumeOptions(EXACT, null)).isSameAs(EXACT);
        Checkpoint.FileEntry none = new Checkpoint.FileEntry(10, 1, false, Map.of(), 0, "window 16");
        assertThat(Checkpoint.resumeOptions(EXACT, none)).isSameAs(EXACT);
    }

    @Test
    void aFileBegunInAnotherOrderGoesOnInIt() {
        ReaderOptions window16 =
                Checkpoint.resumeOptions(EXACT, new Checkpoint.FileEntry(10, 1, false, SOME, 0, "window 16"));
        assertThat(window16.exactOrder()).isFalse();
        assertThat(window16.reorderWindow()).isEqualTo(16);
        assertThat(window16.interleaveLanes()).isTrue();

        ReaderOptions asRead = EXACT.withExactOrder(false);
        ReaderOptions exact =
                Checkpoint.resumeOptions(asRead, new Checkpoint.FileEntry(10, 1, false, SOME, 0, "exact"));
        assertThat(exact.exactOrder()).isTrue();

        Checkpoint.FileEntry same = new Checkpoint.FileEntry(10, 1, false, SOME, 0, "exact");
        assertThat(Checkpoint.resumeOptions(EXACT, same)).isSameAs(EXACT);
    }

    @Test
    void anEntryOfAnOlderLlmprofWasReadWithinTheWindow() throws IOException {
        // as llmprof wrote it before entries named their order
        Path file = dir.resolve("old.checkpoint");
        Files.writeString(
                file,
                """
                {"version": 1, "files": {"rank0.json": {"size": 10, "mtimeMs": 1, "complete": false,
                 "next": {"0": {"HOST": 100}}, "problemsSent": 0}}}""");
        Checkpoint.FileEntry entry = Checkpoint.load(file).get("rank0.json");
        assertThat(entry.order()).isNull();

        ReaderOptions resumed = Checkpoint.resumeOptions(EXACT, entry);
        assertThat(resumed.exactOrder()).isFalse();
        assertThat(resumed.reorderWindow()).isEqualTo(ReaderOptions.DEFAULT_REORDER_WINDOW);
    }

    @Test
    void theOrderIsWrittenAndReadBack() throws IOException {
        Path file = dir.resolve("c.checkpoint");
        Checkpoint.EMPTY
                .with("a.json", new Checkpoint.FileEntry(10, 1, true, SOME, 0, "exact"))
                .writeAtomically(file);
        assertThat(Checkpoint.load(file).get("a.json").order()).isEqualTo("exact");
    }
}
