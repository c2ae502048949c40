package io.llmprof.agent.kineto;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.StringJoiner;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PipelinedReadTest {
    /** Passes every call on; tests override one to watch or fail. */
    private static class Hooked implements OrderedSink {
        private final OrderedSink next;

        Hooked(OrderedSink next) {
            this.next = next;
        }

        @Override
        public void event(String rank, Lane lane, long index, TraceEvent event) {
            next.event(rank, lane, index, event);
        }

        @Override
        public void endOfTrace(String rank, Lane lane) {
            next.endOfTrace(rank, lane);
        }

        @Override
        public void problem(InputProblem problem) {
            next.problem(problem);
        }
    }

    @TempDir
    Path dir;

    /** Enough kernels, on two devices and the host, to fill several hand-off batches, with bad events between. */
    private Path bigTrace() throws IOException {
        StringJoiner events = new StringJoiner(",\n", "{\"traceEvents\": [\n", "\n]}");
        for (int i = 0; i < 9_000; i++) {
            events.add(Fixtures.kernel("k" + (i % 17), String.valueOf(1000 + i * 3 - (i % 5)), "2", i));
            if (i % 3 == 0) {
                events.add(Fixtures.runtime("cudaLaunchKernel", String.valueOf(900 + i * 3), "1", i, i));
            }
            if (i % 1000 == 7) {
                events.add("{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"no_ts\", \"pid\": 0}");
            }
            if (i % 2000 == 11) {
                events.add("{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"dev1\", \"pid\": 1, \"ts\": " + (1000 + i)
                        + ", \"dur\": 1}");
            }
        }
        return Fixtures.write(dir, "big.json", events.toString());
    }

    @Test
    void deliversExactlyWhatAPlainReadDeliversOnTheCallingThread() throws IOException {
        Path file = bigTrace();
        RecordingSink plain = new RecordingSink();
        ReadSummary plainSummary = KinetoReader.read(file, ReaderOptions.defaults(), plain);

        Set<Thread> threads = new HashSet<>();
        RecordingSink piped = new RecordingSink();
        ReadSummary pipedSummary = PipelinedRead.read(file, ReaderOptions.defaults(), new Hooked(piped) {
            @Override
            public void event(String rank, Lane lane, long index, TraceEvent event) {
                threads.add(Thread.currentThread());
                super.event(rank, lane, index, event);
            }
        });

        assertThat(plain.events).hasSizeGreaterThan(3 * 2048);
        assertThat(plain.problems).hasSize(9);
        assertThat(piped.events).isEqualTo(plain.events);
        assertThat(piped.ends).isEqualTo(plain.ends);
        assertThat(piped.problems).isEqualTo(plain.problems);
        assertThat(pipedSummary).isEqualTo(plainSummary);
        assertThat(threads).containsExactly(Thread.currentThread());
    }

    @Test
    void aTruncatedFileReportsAsAPlainRead() throws IOException {
        Path whole = bigTrace();
        byte[] all = Files.readAllBytes(whole);
        Path cut = dir.resolve("cut.json");
        Files.write(cut, java.util.Arrays.copyOf(all, all.length / 2));
        RecordingSink plain = new RecordingSink();
        ReadSummary plainSummary = KinetoReader.read(cut, ReaderOptions.defaults(), plain);
        RecordingSink piped = new RecordingSink();
        ReadSummary pipedSummary = PipelinedRead.read(cut, ReaderOptions.defaults(), piped);

        assertThat(pipedSummary.complete()).isFalse();
        assertThat(pipedSummary).isEqualTo(plainSummary);
        assertThat(piped.events).isEqualTo(plain.events);
        assertThat(piped.problems).isEqualTo(plain.problems);
    }

    @Test
    void aMissingFileFailsOnTheCallingThread() {
        assertThatThrownBy(() ->
                        PipelinedRead.read(dir.resolve("none.json"), ReaderOptions.defaults(), new RecordingSink()))
                .isInstanceOf(NoSuchFileException.class);
    }

    @Test
    void aFailingSinkStopsTheReaderThread() throws Exception {
        Path file = bigTrace();
        OrderedSink failing = new Hooked(new RecordingSink()) {
            @Override
            public void event(String rank, Lane lane, long index, TraceEvent event) {
                if (index == 100) {
                    throw new IllegalStateException("sink broke");
                }
                super.event(rank, lane, index, event);
            }
        };
        assertThatThrownBy(() -> PipelinedRead.read(file, ReaderOptions.defaults(), failing))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("sink broke");
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().equals("kineto-reader")) {
                t.join(Duration.ofSeconds(30).toMillis());
                assertThat(t.isAlive())
                        .as("reader thread after the sink failed")
                        .isFalse();
            }
        }
    }
}
