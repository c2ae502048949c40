package io.llmprof.deploy.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The demo banner's host-overhead link names a rank the agent will report. */
class DemoCommandTest {
    @Test
    void theHostLinkNamesTheFirstFilesRank() {
        // synth writes rank-<n>.pt.trace.json.gz; the agent takes the rank from the name: "1".
        assertThat(DemoCommand.hostUrl(
                        "http://127.0.0.1:8080",
                        List.of(Path.of("samples/demo/rank-1.pt.trace.json.gz"), Path.of("rank-0.json"))))
                .isEqualTo("http://127.0.0.1:8080/api/ranks/1/host?job=demo");
    }

    @Test
    void aFileNameWithoutARankGivesAPlaceholder() {
        assertThat(DemoCommand.hostUrl("http://h:1", List.of(Path.of("trace.json"))))
                .isEqualTo("http://h:1/api/ranks/<rank>/host?job=demo");
    }
}
