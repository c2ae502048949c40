package io.llmprof.deploy.monitoring;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Where the Prometheus and Alertmanager executables are: looked up on a PATH-style search path (the process's
 * {@code PATH} by default; tests pass their own), under the Debian names ({@code prometheus},
 * {@code prometheus-alertmanager}) and, for Alertmanager, the upstream name {@code alertmanager}.
 */
public record MonitoringBinaries(Optional<Path> prometheus, Optional<Path> alertmanager) {
    public static final String INSTALL_HINT = "sudo apt-get install prometheus prometheus-alertmanager";
    static final List<String> PROMETHEUS_NAMES = List.of("prometheus");
    static final List<String> ALERTMANAGER_NAMES = List.of("prometheus-alertmanager", "alertmanager");

    /** The binaries on this process's {@code PATH}. */
    public static MonitoringBinaries locate() {
        return locate(System.getenv("PATH"));
    }

    /** The binaries on {@code searchPath} (entries separated by the platform's path separator; null: none). */
    public static MonitoringBinaries locate(String searchPath) {
        return new MonitoringBinaries(find(PROMETHEUS_NAMES, searchPath), find(ALERTMANAGER_NAMES, searchPath));
    }

    public boolean installed() {
        return prometheus.isPresent() && alertmanager.isPresent();
    }

    /** The names of the missing executables, e.g. {@code [prometheus-alertmanager]}; empty when both are there. */
    public List<String> missing() {
        List<String> out = new ArrayList<>();
        if (prometheus.isEmpty()) {
            out.add(PROMETHEUS_NAMES.get(0));
        }
        if (alertmanager.isEmpty()) {
            out.add(ALERTMANAGER_NAMES.get(0));
        }
        return out;
    }

    private static Optional<Path> find(List<String> names, String searchPath) {
        if (searchPath == null || searchPath.isBlank()) {
            return Optional.empty();
        }
        for (String name : names) {
            for (String dir : searchPath.split(File.pathSeparator)) {
                if (dir.isBlank()) {
                    continue;
                }
                Path candidate = Path.of(dir, name);
                if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                    return Optional.of(candidate.toAbsolutePath());
                }
            }
        }
        return Optional.empty();
    }
}
