package io.llmprof.agent.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.service.ServiceFixtures.Fixture;
import io.llmprof.agent.service.ServiceFixtures.Format;
import io.llmprof.events.service.ServiceEvent;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Every fixture, written in each format and read back through {@link ServiceReaders}, gives its events exactly. */
class ServiceFixturesReadTest {
    @TempDir
    Path dir;

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        for (Fixture f : ServiceFixtures.all()) {
            for (Format format : Format.values()) {
                out.add(Arguments.of(f.name(), format));
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0} as {1}")
    @MethodSource("cases")
    void readsEveryFixtureBackExactly(String name, Format format) throws Exception {
        Fixture f = ServiceFixtures.all().stream()
                .filter(x -> x.name().equals(name))
                .findFirst()
                .orElseThrow();
        List<Path> files = ServiceFixtures.write(f, format, dir);
        List<ServiceEvent> read = new ArrayList<>();
        List<InputProblem> problems = new ArrayList<>();

        ServiceReaders.Summary s = ServiceReaders.read(dir.resolve(name), read::add, problems::add);

        assertThat(problems).isEmpty();
        assertThat(read).containsExactlyElementsOf(f.events());
        assertThat(s.events()).isEqualTo(f.events().size());
        assertThat(s.format())
                .isEqualTo(format == Format.JSONL ? "jsonl" : format.name().toLowerCase());
        // one database per process
        long pids = f.events().stream().map(ServiceEvent::pid).distinct().count();
        assertThat(files).hasSize(format == Format.JSONL ? 1 : (int) pids);
    }

    @Test
    void truthCountsMatchTheEventsVocabulary() {
        Set<String> forwards = Set.of("modelExec", "forward", "specDecoding");
        Set<String> batches = Set.of("BatchSchedule", "batchFrameworkProcessing");
        for (Fixture f : ServiceFixtures.all()) {
            long fw =
                    f.events().stream().filter(e -> forwards.contains(e.name())).count();
            long bs =
                    f.events().stream().filter(e -> batches.contains(e.name())).count();
            assertThat(fw).as(f.name() + " forwards").isEqualTo(f.truth().forwards());
            assertThat(bs).as(f.name() + " batches").isEqualTo(f.truth().batches());
        }
    }

    @Test
    void requeuedRequestHasTwoEnqueuesAndItsQueueWaitSumsBothIntervals() {
        var r = ServiceFixtures.requeued().truth().requests().get("1");
        // (120 - 20) + (600 - 300) µs
        assertThat(r.queueWaitNs()).isEqualTo(400_000);
        assertThat(r.enqueues()).isEqualTo(2);
        assertThat(r.ttftNs()).isEqualTo(260_000);
        assertThat(r.tpotNs()).isEqualTo(280_000.0);
    }

    @Test
    void speculativeOutputTokensAreStepsPlusAcceptedDrafts() {
        var r = ServiceFixtures.speculative().truth().requests().get("2");
        assertThat(r.outputTokens()).isEqualTo(4 + 6);
        assertThat(r.tpotNs()).isEqualTo(210_000.0 / 9);
    }

    @Test
    void twoDpRanksAreTwoDatabasesMergedInTimeOrder() throws Exception {
        Fixture f = ServiceFixtures.twoDpRanks();
        List<Path> files = ServiceFixtures.write(f, Format.MSTX, dir);
        assertThat(files)
                .extracting(p -> p.getFileName().toString())
                .containsExactly("ms_service_400.db", "ms_service_401.db");
        List<ServiceEvent> read = new ArrayList<>();
        ServiceReaders.read(dir.resolve(f.name()), read::add, p -> {});
        assertThat(read).extracting(ServiceEvent::pid).startsWith(400L, 401L, 400L, 401L);
        assertThat(read).isSortedAccordingTo((a, b) -> Long.compare(a.startNs(), b.startNs()));
    }
}
