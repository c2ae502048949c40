package io.llmprof.agent.kineto;

import static org.assertj.core.api.Assertions.fail;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;

/**
 * The real third-party traces in {@code ../shared/data} (system property {@code llmprof.shared.data}, set by
 * the parent pom). Missing data fails the test unless {@code llmprof.shared.data.optional=true}.
 */
public final class SharedData {
    private SharedData() {}

    public static Path file(String relative) {
        String root = System.getProperty("llmprof.shared.data");
        boolean optional = Boolean.getBoolean("llmprof.shared.data.optional");
        Path path = root == null ? null : Path.of(root).resolve(relative);
        if (path == null || !Files.isRegularFile(path)) {
            String why = "shared test data not found: " + (path == null ? "llmprof.shared.data is not set" : path)
                    + " (set -Dllmprof.shared.data.optional=true to skip)";
            if (optional) {
                Assumptions.abort(why);
            }
            fail(why);
        }
        return path;
    }
}
