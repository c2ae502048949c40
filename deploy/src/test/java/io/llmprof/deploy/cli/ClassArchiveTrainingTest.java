package io.llmprof.deploy.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ClassArchiveTrainingTest {

    /**
     * Every training run succeeds (the launcher ignores the exit, so a failing step would only archive fewer classes
     * unseen), and the trace is large enough for the reading paths of a real trace: the split read starts at 8 MiB
     * ({@code SplitAhead.MIN_FILE_BYTES}).
     */
    @Test
    void everyRunSucceedsOnATraceThatTakesTheSplitRead(@TempDir Path dir) throws Exception {
        assertThat(ClassArchiveTraining.train(dir)).isZero();

        assertThat(Files.size(dir.resolve(ClassArchiveTraining.TRACE))).isGreaterThan(8L << 20);
    }
}
