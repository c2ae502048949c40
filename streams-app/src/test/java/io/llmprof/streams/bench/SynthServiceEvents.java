package io.llmprof.streams.bench;

import io.llmprof.agent.service.ServiceFixtures.Format;
import io.llmprof.agent.service.ServiceReaders;
import io.llmprof.agent.service.ServiceSynth;
import io.llmprof.events.service.ServiceEvent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The service benches' input: a synth-service run written as JSON lines to a directory, read back into memory. */
final class SynthServiceEvents {
    private SynthServiceEvents() {}

    /**
     * The events of {@code spec}'s run, written to a temp directory that is deleted once they are in memory (a run of
     * 200,000 requests is about 160 MB of JSON lines).
     */
    static List<ServiceEvent> read(ServiceSynth.Spec spec) throws Exception {
        Path dir = Files.createTempDirectory("llmprof-synth-service-bench-");
        try {
            return read(spec, dir);
        } finally {
            StreamsBenchmark.deleteRecursively(dir);
        }
    }

    /** The events of {@code spec}'s run, written to {@code dir}; any input problem stops the bench. */
    static List<ServiceEvent> read(ServiceSynth.Spec spec, Path dir) throws Exception {
        ServiceSynth.write(spec, Format.JSONL, dir);
        List<ServiceEvent> events = new ArrayList<>();
        ServiceReaders.read(dir, events::add, p -> {
            throw new IllegalStateException(p.toString());
        });
        return events;
    }
}
