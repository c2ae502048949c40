package io.llmprof.agent.sequence;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A read's spill directory goes away when it is closed, and when the JVM is stopped in the middle of the read. */
class ScratchDirTest {
    @TempDir
    Path parent;

    @Test
    void closeDeletesTheDirectoryWithWhatItHoldsAndItsShutdownHook() throws IOException {
        ScratchDir dir = ScratchDir.create(parent.resolve("made/on/demand"), "llmprof-sort-");
        assertThat(dir.path().getFileName().toString()).startsWith("llmprof-sort-");
        Files.writeString(Files.createDirectories(dir.path().resolve("sub")).resolve("run.pb"), "x");
        assertThat(dir.hooked()).isTrue();

        dir.close();

        assertThat(dir.path()).doesNotExist();
        assertThat(dir.hooked()).isFalse();
        dir.close(); // twice is harmless
    }

    /** Stopped as Ctrl-C or a service manager stops it (SIGTERM): no finally runs, the shutdown hook does. */
    @Test
    void aJvmStoppedWhileTheDirectoryIsInUseDeletesIt() throws Exception {
        Process p = new ProcessBuilder(
                        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-cp",
                        System.getProperty("java.class.path"),
                        Holder.class.getName(),
                        parent.toString())
                .redirectErrorStream(true)
                .start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            String line = CompletableFuture.supplyAsync(() -> {
                        try {
                            return out.readLine();
                        } catch (IOException e) {
                            return "read failed: " + e;
                        }
                    })
                    .get(60, TimeUnit.SECONDS);
            assertThat(line).startsWith("holding ");
            Path held = Path.of(line.substring("holding ".length()));
            assertThat(held.resolve("run.pb")).exists();

            p.destroy(); // SIGTERM
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();

            assertThat(held).doesNotExist();
        } finally {
            p.destroyForcibly();
        }
    }

    /**
     * SIGKILL leaves a directory behind (no hook runs): the next one created beside it sweeps it, when its process is
     * gone and it has not changed for a while. Nothing else is touched.
     */
    @Test
    void theNextDirectoryCreatedSweepsTheStaleOnesOfDeadProcesses() throws Exception {
        Process done = new ProcessBuilder("true").start();
        assertThat(done.waitFor(60, TimeUnit.SECONDS)).isTrue();
        long dead = done.pid();
        long live = ProcessHandle.current().parent().orElseThrow().pid();
        FileTime old = FileTime.from(Instant.now().minus(ScratchDir.STALE_AFTER).minusSeconds(60));
        Path killed = Files.createDirectory(parent.resolve("llmprof-sort-" + dead + "-123"));
        Files.writeString(killed.resolve("lane-run-1.pb"), "x");
        Files.setLastModifiedTime(killed, old);
        Path recent = Files.createDirectory(parent.resolve("llmprof-sort-" + dead + "-456"));
        Path running = Files.createDirectory(parent.resolve("llmprof-sort-" + live + "-789"));
        Files.setLastModifiedTime(running, old);
        Path unnamed = Files.createDirectory(parent.resolve("llmprof-sort-123456789"));
        Files.setLastModifiedTime(unnamed, old);
        Path other = Files.createDirectory(parent.resolve("llmprof-interleave-" + dead + "-1"));
        Files.setLastModifiedTime(other, old);

        try (ScratchDir dir = ScratchDir.create(parent, "llmprof-sort-")) {
            assertThat(dir.path().getFileName().toString())
                    .startsWith("llmprof-sort-" + ProcessHandle.current().pid() + "-");
            assertThat(killed).doesNotExist();
            assertThat(recent).as("may still be in use").exists();
            assertThat(running).as("its process is alive").exists();
            assertThat(unnamed).as("not named with a pid").exists();
            assertThat(other).as("another prefix").exists();
        }
    }

    /** Creates a scratch directory with a file in it, says where, and waits on stdin for ever. */
    public static final class Holder {
        public static void main(String[] args) throws IOException {
            ScratchDir dir = ScratchDir.create(Path.of(args[0]), "llmprof-sort-");
            Files.writeString(dir.path().resolve("run.pb"), "x");
            System.out.println("holding " + dir.path());
            System.out.flush();
            System.in.read();
        }
    }
}
