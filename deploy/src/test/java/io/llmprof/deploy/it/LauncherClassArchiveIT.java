package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher's class-data-sharing archive (./llmprof): trained once per build, used while it is newer than every
 * jar, never a message on stdout when the JVM refuses it, not trained again after a failure; and the collector it
 * picks for {@code analyze}. Runs the real launcher
 * script on a copy of the packaged jars (so the archive is written beside the copies, not into this checkout), with
 * its build stamp in place, so the launcher does not run Maven.
 */
class LauncherClassArchiveIT {
    private static final List<String> MODULES = List.of("events", "agent", "streams-app", "dashboard", "deploy");
    private static final String SHARED_TOP = "source: shared objects file (top)";

    @TempDir
    Path root;

    private Path archive;

    record Run(int exit, String out, String err) {}

    @BeforeEach
    void copyLauncherAndJars() throws IOException {
        Path repo = Path.of("..").toAbsolutePath().normalize();
        Files.copy(repo.resolve("llmprof"), root.resolve("llmprof"), StandardCopyOption.COPY_ATTRIBUTES);
        for (String m : MODULES) {
            Path target = Files.createDirectories(root.resolve(m).resolve("target"));
            String jar = m + "-0.1.0-SNAPSHOT.jar";
            Files.copy(repo.resolve(m).resolve("target").resolve(jar), target.resolve(jar));
        }
        Path deployTarget = root.resolve("deploy/target");
        Files.copy(repo.resolve("deploy/target/classpath.txt"), deployTarget.resolve("classpath.txt"));
        Files.writeString(deployTarget.resolve(".llmprof-built"), ""); // the build stamp: no Maven run
        archive = deployTarget.resolve("llmprof-classes.jsa");
    }

    @Test
    void trainsOnceThenEveryStartMapsTheArchivedClasses() throws Exception {
        Run first = launcher(Map.of(), "--version");
        assertThat(first.exit()).isZero();
        assertThat(first.out().strip()).isEqualTo("llmprof 0.1.0-SNAPSHOT");
        assertThat(first.err()).contains("llmprof: archiving classes for faster starts");
        assertThat(archive).isNotEmptyFile();

        Run second = launcher(Map.of("LLMPROF_JAVA_OPTS", "-Xmx256m -Xlog:class+load=info"), "--version");
        assertThat(second.exit()).isZero();
        assertThat(second.err()).doesNotContain("archiving");
        assertThat(second.out()).contains("io.llmprof.deploy.cli.Llmprof " + SHARED_TOP);
        // trained on analyze layers: its classes come from the archive too
        Run layers = launcher(Map.of("LLMPROF_JAVA_OPTS", "-Xmx256m -Xlog:class+load=info"), "analyze", "layers", "-h");
        assertThat(layers.out()).contains("io.llmprof.streams.offline.AnalyzeLayersCommand " + SHARED_TOP);

        Run off = launcher(
                Map.of("LLMPROF_CDS", "0", "LLMPROF_JAVA_OPTS", "-Xmx256m -Xlog:class+load=info"), "--version");
        assertThat(off.out()).contains("io.llmprof.deploy.cli.Llmprof").doesNotContain(SHARED_TOP);
    }

    @Test
    void anArchiveTheJvmRefusesChangesNothingTheUserSees() throws Exception {
        Run plain = launcher(Map.of("LLMPROF_CDS", "0"), "analyze", "layers", "--help");
        assertThat(plain.exit()).isZero();
        assertThat(launcher(Map.of(), "--version").err()).contains("archiving classes");
        // A jar that is not the one archived but still older than the archive: the launcher passes the archive on,
        // the JVM finds the jar changed and refuses it (by default with a warning on stdout).
        Path agentJar = root.resolve("agent/target/agent-0.1.0-SNAPSHOT.jar");
        Files.setLastModifiedTime(
                agentJar, FileTime.fromMillis(Files.getLastModifiedTime(archive).toMillis() - 10_000));
        Run refused = launcher(Map.of("LLMPROF_SKIP_BUILD", "1"), "analyze", "layers", "--help");
        assertThat(refused.exit()).isZero();
        assertThat(refused.out()).isEqualTo(plain.out());
        assertThat(refused.err()).isEmpty();
        Files.writeString(archive, "not a class archive\n");
        Run garbage = launcher(Map.of("LLMPROF_SKIP_BUILD", "1"), "analyze", "layers", "--help");
        assertThat(garbage.exit()).isZero();
        assertThat(garbage.out()).isEqualTo(plain.out());
        assertThat(garbage.err()).isEmpty();
    }

    @Test
    void aJarNewerThanTheArchiveIsNotRunWithItAndTheNextBuildStartTrainsAgain() throws Exception {
        assertThat(launcher(Map.of(), "--version").err()).contains("archiving classes");
        Path agentJar = root.resolve("agent/target/agent-0.1.0-SNAPSHOT.jar");
        FileTime later = FileTime.fromMillis(Files.getLastModifiedTime(archive).toMillis() + 1);
        Files.setLastModifiedTime(agentJar, later);

        Run skipBuild = launcher(
                Map.of("LLMPROF_SKIP_BUILD", "1", "LLMPROF_JAVA_OPTS", "-Xmx256m -Xlog:class+load=info"), "--version");
        assertThat(skipBuild.exit()).isZero();
        assertThat(skipBuild.err()).doesNotContain("archiving"); // LLMPROF_SKIP_BUILD=1: runs the jars as they are
        assertThat(skipBuild.out()).contains("io.llmprof.deploy.cli.Llmprof").doesNotContain(SHARED_TOP);

        Run retrain = launcher(Map.of(), "--version");
        assertThat(retrain.err()).contains("archiving classes");
        Run after = launcher(
                Map.of("LLMPROF_SKIP_BUILD", "1", "LLMPROF_JAVA_OPTS", "-Xmx256m -Xlog:class+load=info"), "--version");
        assertThat(after.out()).contains("io.llmprof.deploy.cli.Llmprof " + SHARED_TOP);
    }

    @Test
    void aJvmThatWritesNoArchiveIsNotAskedAgainBeforeTheNextBuild() throws Exception {
        // without the JDK's base archive, the JVM cannot write a dynamic one
        Map<String, String> noBase = Map.of("JAVA_TOOL_OPTIONS", "-Xshare:off");
        Run first = launcher(noBase, "--version");
        assertThat(first.exit()).isZero();
        assertThat(first.out().strip()).isEqualTo("llmprof 0.1.0-SNAPSHOT");
        assertThat(first.err()).contains("archiving classes").contains("the JVM wrote no class archive");
        assertThat(archive).doesNotExist();

        Run second = launcher(noBase, "--version");
        assertThat(second.exit()).isZero();
        assertThat(second.err()).doesNotContain("archiving");
    }

    /**
     * {@code analyze} runs on the serial collector, unless LLMPROF_JAVA_OPTS chooses one: two choices would stop the
     * JVM ("Multiple garbage collectors selected"). Other commands keep the JVM's default.
     */
    @Test
    void analyzeRunsOnTheSerialCollectorUnlessTheOptionsChooseOne() throws Exception {
        Run serial = launcher(
                Map.of("LLMPROF_CDS", "0", "LLMPROF_JAVA_OPTS", "-Xmx256m -Xlog:gc"), "analyze", "layers", "--help");
        assertThat(serial.exit()).isZero();
        assertThat(serial.out()).contains("Using Serial").contains("Usage: llmprof analyze layers");
        for (String gc : List.of("G1", "Parallel")) {
            Run chosen = launcher(
                    Map.of("LLMPROF_CDS", "0", "LLMPROF_JAVA_OPTS", "-Xmx256m -XX:+Use" + gc + "GC -Xlog:gc"),
                    "analyze",
                    "layers",
                    "--help");
            assertThat(chosen.exit()).as(chosen.err()).isZero();
            assertThat(chosen.out()).contains("Using " + gc).doesNotContain("Using Serial");
        }
        Run other = launcher(Map.of("LLMPROF_CDS", "0", "LLMPROF_JAVA_OPTS", "-Xmx256m -Xlog:gc"), "--version");
        assertThat(other.out()).contains("Using G1");
    }

    private Run launcher(Map<String, String> env, String... args) throws Exception {
        Path out = Files.createTempFile(root, "out", ".txt");
        Path err = Files.createTempFile(root, "err", ".txt");
        List<String> command = new ArrayList<>();
        command.add(root.resolve("llmprof").toString());
        command.addAll(List.of(args));
        ProcessBuilder pb =
                new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile());
        Map<String, String> e = pb.environment();
        e.remove("LLMPROF_SKIP_BUILD");
        e.remove("LLMPROF_CDS");
        e.remove("LLMPROF_JAVA_OPTS");
        e.remove("JAVA_TOOL_OPTIONS");
        e.putAll(env);
        Process p = pb.start();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("./llmprof " + String.join(" ", args) + " did not finish in 120 s");
        }
        StringBuilder stderr = new StringBuilder();
        for (String line : Files.readAllLines(err)) {
            if (!line.startsWith("Picked up JAVA_TOOL_OPTIONS")) {
                stderr.append(line).append('\n');
            }
        }
        return new Run(p.exitValue(), Files.readString(out), stderr.toString());
    }
}
