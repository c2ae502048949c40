package io.llmprof.agent.synth;

import io.llmprof.agent.service.ServiceFixtures;
import io.llmprof.agent.service.ServiceSynth;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code llmprof synth-service}: a synthetic serving run of service events with known truth. */
@Command(
        name = "synth-service",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Writes a synthetic MindIE-style serving run (httpReq, Enqueue/Dequeue, BatchSchedule, modelExec,",
            "httpRes) into directory --out: ms_service_<pid>.db per DP rank (slice or mstx layout) or events.jsonl,",
            "and truth.json (requests, events, batches, forwards, token and latency sums). Streamed: any size in",
            "bounded memory. Same options, same bytes. See docs/service-events.md."
        })
public final class SynthServiceCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--requests", defaultValue = "1000", description = "Requests. Default: ${DEFAULT-VALUE}.")
    long requests;

    @Option(names = "--dp-ranks", defaultValue = "1", description = "DP ranks. Default: ${DEFAULT-VALUE}.")
    int dpRanks;

    @Option(
            names = "--format",
            defaultValue = "slice",
            description = "slice, mstx (raw ms_service_*.db layouts) or jsonl. Default: ${DEFAULT-VALUE}.")
    String format;

    @Option(names = "--out", required = true, description = "Output directory.")
    Path out;

    @Option(names = "--seed", defaultValue = "1", description = "Token-count seed. Default: ${DEFAULT-VALUE}.")
    long seed;

    public SynthServiceCommand() {}

    @Override
    public Integer call() throws Exception {
        ServiceFixtures.Format f;
        try {
            f = ServiceFixtures.Format.valueOf(format.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), "--format must be slice, mstx or jsonl, not " + format);
        }
        if (requests < 0 || dpRanks < 1) {
            throw new ParameterException(spec.commandLine(), "--requests must be >= 0 and --dp-ranks >= 1");
        }
        long t0 = System.nanoTime();
        ServiceSynth.Truth t = ServiceSynth.write(new ServiceSynth.Spec(requests, dpRanks, seed), f, out);
        PrintWriter w = spec.commandLine().getOut();
        w.printf(
                Locale.ROOT,
                "wrote %s (%s): %,d requests, %,d events, %,d forwards in %.2f s; truth in %s%n",
                out,
                format,
                t.requests(),
                t.events(),
                t.forwards(),
                (System.nanoTime() - t0) / 1e9,
                out.resolve("truth.json"));
        w.flush();
        return 0;
    }
}
