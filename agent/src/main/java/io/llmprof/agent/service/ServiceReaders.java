package io.llmprof.agent.service;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.events.service.ServiceEvent;
import java.io.IOException;
import java.nio.file.Path;
import java.util.function.Consumer;

/**
 * Reads service events from any supported input, in start-time order, with bounded memory:
 *
 * <ul>
 *   <li>a raw msServiceProfiler DB {@code ms_service_*.db} ({@code slice} or legacy {@code mstx} layout, with
 *       {@code meta});
 *   <li>a directory: every {@code ms_service_*.db} in it (recursively), merged by time; else its {@code
 *       chrome_tracing.json}; else its {@code *.jsonl} files;
 *   <li>msServiceProfiler's {@code chrome_tracing.json} (or any {@code .json} / {@code .json.gz});
 *   <li>llmprof's JSON-lines format ({@code .jsonl}, {@code .jsonl.gz}, see {@link ServiceJsonLines}).
 * </ul>
 *
 * Bad rows are reported to {@code problems} (file and row/line/byte position) and skipped; reading goes on.
 */
public final class ServiceReaders {
    private ServiceReaders() {}

    /** What a read saw. */
    public record Summary(long events, long problems, String format) {}

    /** Reads {@code input} to its end, handing each event to {@code events} in start-time order. */
    public static Summary read(Path input, Consumer<ServiceEvent> events, Consumer<InputProblem> problems)
            throws IOException {
        throw new UnsupportedOperationException("readers: helper h1");
    }
}
