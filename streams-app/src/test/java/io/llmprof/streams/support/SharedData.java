package io.llmprof.streams.support;

import java.nio.file.Files;
import java.nio.file.Path;

/** The shared real-data folder (system property {@code llmprof.shared.data}, set by the parent POM). */
public final class SharedData {
    private SharedData() {}

    /** A file under the shared data folder; fails loudly (never skips) when the data is missing. */
    public static Path file(String relative) {
        String base = System.getProperty("llmprof.shared.data");
        if (base == null || base.isBlank()) {
            throw new IllegalStateException("system property llmprof.shared.data is not set (the parent POM sets it "
                    + "for surefire); run the tests through Maven or pass -Dllmprof.shared.data=DIR");
        }
        Path p = Path.of(base, relative);
        if (!Files.isRegularFile(p)) {
            throw new IllegalStateException("shared test data missing: " + p + " (llmprof.shared.data=" + base + ")");
        }
        return p;
    }
}
