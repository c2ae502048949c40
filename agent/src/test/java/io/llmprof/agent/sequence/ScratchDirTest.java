package io.llmprof.agent.sequence;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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
