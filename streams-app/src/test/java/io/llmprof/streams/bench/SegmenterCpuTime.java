package io.llmprof.streams.bench;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.produce.TraceReaders;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.boundary.Emitted;
import io.llmprof.streams.boundary.PassSegmenter;
import io.llmprof.streams.boundary.SegmenterConfig;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The segmenter alone (what {@code analyze layers} runs on its main thread and the streams app on its stream thread),
 * timed by the thread's CPU time: a Kineto trace is read once with its lanes interleaved by time, as {@code analyze
 * layers} reads it, then every round feeds all its events to a fresh {@link PassSegmenter} per rank. Prints the CPU
 * nanoseconds per event of every round, and the passes closed (the same in every round). Run it once with {@code
 * -XX:TieredStopAtLevel=1} (the offline launcher's JIT: the first rounds are what one {@code analyze} pays) and once
 * without (the stream thread's). Arguments: trace, model config, rounds (default 10). How to run: docs/benchmarks.md.
 */
public final class SegmenterCpuTime {
    private SegmenterCpuTime() {}

    public static void main(String[] args) throws Exception {
        Path trace = Path.of(args[0]);
        SegmenterConfig config = SegmenterConfig.resolve(Path.of(args[1]), null, null, null);
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 10;
        List<String> ranks = new ArrayList<>();
        List<TraceEvent> events = new ArrayList<>();
        TraceReaders.read(
                trace, ReaderOptions.defaults().withInputDims(false).withInterleavedLanes(true), new OrderedSink() {
                    @Override
                    public void event(String rank, Lane lane, long index, TraceEvent event) {
                        ranks.add(rank);
                        events.add(event);
                    }

                    @Override
                    public void endOfTrace(String rank, Lane lane) {}

                    @Override
                    public void problem(InputProblem problem) {}
                });
        int n = events.size();
        String[] rankOf = ranks.toArray(new String[0]);
        System.out.printf("%s: %d events%n", trace, n);
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long[] nsPerEvent = new long[rounds];
        for (int r = 0; r < rounds; r++) {
            java.util.Map<String, PassSegmenter> segmenters = new java.util.TreeMap<>();
            long passes = 0;
            long cpu0 = threads.getCurrentThreadCpuTime();
            for (int i = 0; i < n; i++) {
                PassSegmenter s = segmenters.get(rankOf[i]);
                if (s == null) {
                    s = new PassSegmenter(config, "job", "run", rankOf[i]);
                    segmenters.put(rankOf[i], s);
                }
                passes += s.accept(events.get(i)).passes().size();
            }
            for (PassSegmenter s : segmenters.values()) {
                Emitted end = s.endOfTrace(PassSegmenter.END_OF_TRACE);
                passes += end.passes().size();
            }
            long cpu = threads.getCurrentThreadCpuTime() - cpu0;
            nsPerEvent[r] = cpu / n;
            System.out.printf("round %d: %d CPU ns per event, %d passes%n", r, nsPerEvent[r], passes);
        }
        long[] sorted = nsPerEvent.clone();
        Arrays.sort(sorted);
        System.out.printf(
                "segmenter: first round %d, min %d, median %d CPU ns per event%n",
                nsPerEvent[0], sorted[0], sorted[rounds / 2]);
    }
}
