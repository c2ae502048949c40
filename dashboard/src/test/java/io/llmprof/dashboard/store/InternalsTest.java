package io.llmprof.dashboard.store;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Absolute paths become file names; everything else a person reads in a dead letter stays as written. */
class InternalsTest {
    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "/home/ops/traces/rank-3.json.gz:1234                | rank-3.json.gz:1234",
                "cannot read /data/t/rank 0 at 12                    | cannot read rank 0 at 12",
                "file:///tmp/x/trace.json@42                         | trace.json@42",
                "(/srv/in/a.json) and \"/srv/in/b.json\"             | (a.json) and \"b.json\"",
                "C:\\Users\\ops\\rank-1.json: bad                    | rank-1.json: bad",
                "\\\\server\\share\\rank-2.json                      | rank-2.json",
                // Not absolute paths: left alone.
                "https://ui.perfetto.dev/a/b?x=1                     | https://ui.perfetto.dev/a/b?x=1",
                "relative/dir/file.json                              | relative/dir/file.json",
                "llmprof.trace-events-0@17                           | llmprof.trace-events-0@17",
                "ratio 3/4 and a/b                                   | ratio 3/4 and a/b",
                "/single                                             | /single",
                "<img src=x onerror=alert(1)>                        | <img src=x onerror=alert(1)>",
            })
    void absolutePathsAreReducedToTheirFileName(String in, String out) {
        assertThat(Internals.redact(in)).isEqualTo(out);
    }

    @Test
    void aPastedStackTraceIsCutAtItsFirstFrame() {
        assertThat(Internals.redact("boom\n\tat a.b.C.d(C.java:1)\n\tat e.F.g(F.java:2)"))
                .isEqualTo("boom");
        assertThat(Internals.redact("java.lang.IllegalStateException: x\r\n    at a.B.c(B.java:3)"))
                .isEqualTo("java.lang.IllegalStateException: x");
        assertThat(Internals.redact("no trace here: at noon (really)")).isEqualTo("no trace here: at noon (really)");
    }
}
