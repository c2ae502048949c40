package io.llmprof.deploy.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JvmThreadsTest {
    @TempDir
    Path proc;

    @Test
    void aStatLineGivesTheNameAndUserPlusSystemTicksEvenWithParenthesesAndSpacesInTheName() {
        String stat = "4242 (C2 Compiler) x) S 1 4242 4242 0 -1 4194368 9 0 0 0 1234 56 0 0 20 0 80 0 73 0 0";

        long[] parsed = JvmThreads.parseStat(stat);

        assertThat(stat.substring((int) parsed[0], (int) parsed[1])).isEqualTo("C2 Compiler) x");
        assertThat(parsed[2]).isEqualTo(1234 + 56);
        assertThat(JvmThreads.parseStat("no name here 1 2 3")).isNull();
        assertThat(JvmThreads.parseStat("7 (short) S 1 2")).isNull();
    }

    @Test
    void compilerAndCollectorThreadsAreToldFromTheRestByName() {
        assertThat(JvmThreads.kind("C2 CompilerThre")).isEqualTo(JvmThreads.Kind.JIT);
        assertThat(JvmThreads.kind("C1 CompilerThre")).isEqualTo(JvmThreads.Kind.JIT);
        assertThat(JvmThreads.kind("GC Thread#1")).isEqualTo(JvmThreads.Kind.GC);
        assertThat(JvmThreads.kind("G1 Conc#0")).isEqualTo(JvmThreads.Kind.GC);
        assertThat(JvmThreads.kind("G1 Refine#0")).isEqualTo(JvmThreads.Kind.GC);
        assertThat(JvmThreads.kind("VM Thread")).isEqualTo(JvmThreads.Kind.GC);
        assertThat(JvmThreads.kind("llmprof-streams")).isEqualTo(JvmThreads.Kind.OTHER);
        assertThat(JvmThreads.kind("Compiler")).isEqualTo(JvmThreads.Kind.OTHER);
    }

    @Test
    void cpuSinceAnEarlierSnapshotCountsJitAndGcThreadsAndANewThreadFromZero() throws IOException {
        task(11, "C2 CompilerThre", 100, 20);
        task(12, "GC Thread#0", 5, 5);
        task(13, "llmprof-streams", 900, 100);
        JvmThreads.Snapshot before = JvmThreads.snapshot(proc);
        task(11, "C2 CompilerThre", 250, 20); // +1.5 s
        task(12, "GC Thread#0", 45, 15); // +0.5 s
        task(13, "llmprof-streams", 5000, 100); // not JIT nor GC
        task(14, "C1 CompilerThre", 30, 0); // started in between: +0.3 s
        Files.writeString(proc.resolve("15"), "a file, not a task"); // unreadable: skipped

        JvmThreads.Snapshot after = JvmThreads.snapshot(proc);
        JvmThreads.Cpu used = after.since(before);

        assertThat(before.readable()).isTrue();
        assertThat(used.jitSeconds()).isCloseTo(1.8, within(1e-9));
        assertThat(used.gcSeconds()).isCloseTo(0.5, within(1e-9));
        assertThat(JvmThreads.snapshot(proc.resolve("absent")).readable()).isFalse();
    }

    @Test
    void onLinuxThisJvmsOwnCompilerThreadsAreFound() {
        JvmThreads.Snapshot now = JvmThreads.snapshot();
        if (!Files.isDirectory(Path.of("/proc/self/task"))) {
            assertThat(now.readable()).isFalse();
            return;
        }
        assertThat(now.readable()).isTrue();
        // This test JVM runs with the JIT on (tiered, the default): at least one compiler thread exists.
        assertThat(now.kinds()).containsValue(JvmThreads.Kind.JIT);
        assertThat(now.kinds()).containsValue(JvmThreads.Kind.OTHER);
    }

    private void task(long tid, String comm, long utime, long stime) throws IOException {
        Path dir = Files.createDirectories(proc.resolve(Long.toString(tid)));
        Files.writeString(
                dir.resolve("stat"),
                tid + " (" + comm + ") S 1 1 1 0 -1 4194368 9 0 0 0 " + utime + " " + stime + " 0 0 20 0 80 0 73\n");
    }
}
