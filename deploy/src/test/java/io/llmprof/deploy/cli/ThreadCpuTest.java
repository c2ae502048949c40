package io.llmprof.deploy.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ThreadCpuTest {
    @ParameterizedTest
    @CsvSource(
            delimiter = ';',
            value = {
                "llmprof-streams-7f3c-StreamThread-1;streams: stream thread",
                "kafka-producer-network-thread | llmprof-streams-7f3c-StreamThread-1-producer;streams: producer I/O",
                "llmprof-streams-7f3c-CleanupThread;streams: other",
                "data-plane-kafka-request-handler-0;broker",
                "TxnMarkerSenderThread-1;broker",
                "llmprof-dashboard-feed;dashboard",
                "JettyServerThreadPool-42;dashboard",
                "kafka-producer-network-thread | llmprof-agent-replay;agent",
                "kineto-reader;agent",
                "Signal Dispatcher;other"
            })
    void threadsAreCountedUnderTheirRole(String thread, String role) {
        assertThat(ThreadCpu.role(thread)).isEqualTo(role);
    }

    @Test
    void theCpuOfThisThreadShowsUnderItsRole() {
        ThreadCpu cpu = ThreadCpu.start();
        long until = ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime() + 50_000_000L;
        long spin = 0;
        while (ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime() < until) {
            spin++;
        }
        String role = ThreadCpu.role(Thread.currentThread().getName());

        assertThat(spin).isPositive();
        assertThat(cpu.byRole()).containsKey(role);
        assertThat(cpu.byRole().get(role)).isGreaterThanOrEqualTo(0.05);
        ThreadCpu.Usage used = cpu.stop();
        assertThat(used.line("x")).startsWith("  cpu during x: ").contains(role + " ");
        if (java.nio.file.Files.isDirectory(java.nio.file.Path.of("/proc/self/task"))) {
            assertThat(used.line("x"))
                    .containsPattern("; JIT threads [0-9.]+ s = [0-9]+ %, GC threads [0-9.]+ s, GC"
                            + " pauses [0-9.]+ s; threads that ended and the VM's others [0-9.]+ s\\)$");
            assertThat(used.jitShare()).isBetween(0.0, 1.0);
        } else {
            assertThat(used.line("x")).contains("JIT compile time").contains("(elapsed)");
            assertThat(used.jitShare()).isNaN();
        }
    }
}
