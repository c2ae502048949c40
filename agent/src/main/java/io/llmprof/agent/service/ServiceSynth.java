package io.llmprof.agent.service;

import io.llmprof.events.Json;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceEvent;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

/**
 * A synthetic serving run of any size with known truth, streamed (memory: one wave of at most {@value #WAVE}
 * requests per DP rank). Request i runs on DP rank i mod K (pid {@code 10000 + rank}, a {@code dpRankId} Meta event
 * first). Each rank serves its requests in waves of up to {@value #WAVE}: per request {@code httpReq} (recvTokenSize)
 * and {@code Enqueue} 10 µs apart, then one {@code BatchSchedule} with every {@code Dequeue}, a prefill {@code
 * modelExec} of 200 µs, then decode steps 100 µs apart ({@code BatchSchedule} 10 µs, {@code modelExec} 50 µs) until
 * the wave's longest request is done; a request with o output tokens runs o - 1 decode steps and ends with {@code
 * httpRes} (replyTokenSize=o) right after its last step. Token counts come from the seed: input 16-512, output 1-32.
 */
public final class ServiceSynth {
    /** Requests per wave (one prefill batch). */
    public static final int WAVE = 8;

    private static final long US = 1_000;

    private ServiceSynth() {}

    /**
     * The run to write.
     *
     * @param requests requests in all
     * @param dpRanks DP ranks (one process and, in the raw layouts, one database each)
     * @param seed token counts' seed: same spec, same bytes
     */
    public record Spec(long requests, int dpRanks, long seed) {
        public Spec {
            if (requests < 0 || dpRanks < 1) {
                throw new IllegalArgumentException("requests " + requests + ", dpRanks " + dpRanks);
            }
        }
    }

    /**
     * What the engine must find. Sums allow means to be checked ({@code ttftSumNs / requests}).
     *
     * @param requests requests (all finish)
     * @param events events written
     * @param batches BatchSchedule events
     * @param forwards modelExec events
     * @param inputTokens sum of recvTokenSize
     * @param outputTokens sum of replyTokenSize
     * @param ttftSumNs sum of (prefill end - httpReq start)
     * @param e2eSumNs sum of (httpRes end - httpReq start)
     * @param queueWaitSumNs sum of (Dequeue - Enqueue)
     * @param firstNs earliest event start
     * @param lastNs latest event end
     */
    public record Truth(
            long requests,
            long events,
            long batches,
            long forwards,
            long inputTokens,
            long outputTokens,
            long ttftSumNs,
            long e2eSumNs,
            long queueWaitSumNs,
            long firstNs,
            long lastNs) {}

    /**
     * Writes the run into directory {@code out}: {@code ms_service_<pid>.db} per rank (SLICE, MSTX) or {@code
     * events.jsonl} (JSONL, ranks merged by time), and {@code truth.json}.
     */
    public static Truth write(Spec spec, ServiceFixtures.Format format, Path out) throws IOException {
        Files.createDirectories(out);
        Acc acc = new Acc();
        if (format == ServiceFixtures.Format.JSONL) {
            PriorityQueue<Rank> heads = new PriorityQueue<>(
                    Comparator.comparingLong((Rank r) -> r.peek().startNs()).thenComparingInt(r -> r.rank));
            for (int r = 0; r < spec.dpRanks(); r++) {
                Rank it = new Rank(spec, r, acc);
                if (it.hasNext()) {
                    heads.add(it);
                }
            }
            try (BufferedWriter w = Files.newBufferedWriter(out.resolve("events.jsonl"), StandardCharsets.UTF_8)) {
                while (!heads.isEmpty()) {
                    Rank r = heads.poll();
                    w.write(ServiceJsonLines.write(r.next()));
                    w.write('\n');
                    if (r.hasNext()) {
                        heads.add(r);
                    }
                }
            }
        } else {
            ServiceDb.Layout layout =
                    format == ServiceFixtures.Format.SLICE ? ServiceDb.Layout.SLICE : ServiceDb.Layout.MSTX;
            for (int r = 0; r < spec.dpRanks(); r++) {
                Rank it = new Rank(spec, r, acc);
                Path file = out.resolve("ms_service_" + it.pid + ".db");
                try (ServiceDbWriter w = ServiceDbWriter.create(file, layout, Map.of("hostname", "synth"))) {
                    while (it.hasNext()) {
                        w.add(it.next());
                    }
                }
            }
        }
        Truth t = acc.truth(spec.requests());
        Json.mapper()
                .writerWithDefaultPrettyPrinter()
                .writeValue(out.resolve("truth.json").toFile(), t);
        return t;
    }

    private static final class Acc {
        long events;
        long batches;
        long forwards;
        long in;
        long out;
        long ttft;
        long e2e;
        long wait;
        long first = Long.MAX_VALUE;
        long last = Long.MIN_VALUE;

        void saw(ServiceEvent e) {
            events++;
            first = Math.min(first, e.startNs());
            last = Math.max(last, e.endNs());
        }

        Truth truth(long requests) {
            return new Truth(
                    requests,
                    events,
                    batches,
                    forwards,
                    in,
                    out,
                    ttft,
                    e2e,
                    wait,
                    events == 0 ? 0 : first,
                    events == 0 ? 0 : last);
        }
    }

    /** One rank's events in time order, a wave at a time. */
    private static final class Rank implements Iterator<ServiceEvent> {
        final Spec spec;
        final int rank;
        final long pid;
        final Acc acc;
        final SplittableRandom random;
        long nextRequest;
        long cursor = ServiceFixtures.T0;
        final List<ServiceEvent> wave = new ArrayList<>();
        int at;

        Rank(Spec spec, int rank, Acc acc) {
            this.spec = spec;
            this.rank = rank;
            this.pid = 10_000L + rank;
            this.acc = acc;
            this.random = new SplittableRandom(spec.seed() * 1_000_003L + rank);
            this.nextRequest = rank;
            ServiceEvent meta = new ServiceEvent(
                    "Meta",
                    "dpRankId",
                    cursor,
                    null,
                    pid,
                    "0",
                    List.of(),
                    Map.of("dpRankId", (double) rank),
                    null,
                    null);
            wave.add(meta);
            cursor += 10 * US;
        }

        ServiceEvent peek() {
            fill();
            return wave.get(at);
        }

        @Override
        public boolean hasNext() {
            fill();
            return at < wave.size();
        }

        @Override
        public ServiceEvent next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            ServiceEvent e = wave.get(at++);
            acc.saw(e);
            return e;
        }

        private void fill() {
            if (at < wave.size() || nextRequest >= spec.requests()) {
                return;
            }
            wave.clear();
            at = 0;
            List<String> rids = new ArrayList<>();
            List<Long> outs = new ArrayList<>();
            long t = cursor;
            while (rids.size() < WAVE && nextRequest < spec.requests()) {
                String rid = Long.toString(nextRequest);
                nextRequest += spec.dpRanks();
                long in = 16 + random.nextInt(497);
                long out = 1 + random.nextInt(32);
                long arrival = t + rids.size() * 10 * US;
                wave.add(ev("Request", "httpReq", arrival, 5 * US, one(rid), Map.of("recvTokenSize", (double) in)));
                wave.add(ev("Schedule", "Enqueue", arrival + 6 * US, null, one(rid), Map.of()));
                acc.in += in;
                acc.out += out;
                acc.ttft -= arrival;
                acc.e2e -= arrival;
                acc.wait -= arrival + 6 * US;
                rids.add(rid);
                outs.add(out);
            }
            long sched = t + WAVE * 10 * US + 10 * US;
            List<RequestRef> prefill = new ArrayList<>();
            for (int j = 0; j < rids.size(); j++) {
                prefill.add(new RequestRef(rids.get(j), rids.get(j), 0L, "prefill", null));
            }
            wave.add(ev(
                    "Schedule", "BatchSchedule", sched, 20 * US, prefill, Map.of("batchSize", (double) rids.size())));
            acc.batches++;
            for (int j = 0; j < rids.size(); j++) {
                long dq = sched + (1 + j) * US;
                wave.add(ev("Schedule", "Dequeue", dq, null, one(rids.get(j)), Map.of()));
                acc.wait += dq;
            }
            long prefillStart = sched + 50 * US;
            long prefillEnd = prefillStart + 200 * US;
            wave.add(ev("ModelExecute", "modelExec", prefillStart, 200 * US, prefill, Map.of()));
            acc.forwards++;
            acc.ttft += prefillEnd * rids.size();
            long maxOut = outs.stream().mapToLong(Long::longValue).max().orElse(1);
            long stepStart = prefillEnd + 30 * US;
            finish(rids, outs, 1, prefillEnd);
            for (long s = 1; s < maxOut; s++) {
                List<RequestRef> refs = new ArrayList<>();
                for (int j = 0; j < rids.size(); j++) {
                    if (outs.get(j) > s) {
                        refs.add(new RequestRef(rids.get(j), rids.get(j), s, "decode", null));
                    }
                }
                wave.add(ev("Schedule", "BatchSchedule", stepStart, 10 * US, refs, Map.of()));
                wave.add(ev("ModelExecute", "modelExec", stepStart + 20 * US, 50 * US, refs, Map.of()));
                acc.batches++;
                acc.forwards++;
                finish(rids, outs, s + 1, stepStart + 70 * US);
                stepStart += 100 * US;
            }
            cursor = stepStart + 100 * US;
            wave.sort(Comparator.comparingLong(ServiceEvent::startNs));
        }

        /** httpRes for the requests whose last step (o - 1 decode steps) ended at {@code stepEnd}. */
        private void finish(List<String> rids, List<Long> outs, long outputDone, long stepEnd) {
            for (int j = 0; j < rids.size(); j++) {
                if (outs.get(j) == outputDone) {
                    long start = stepEnd + (5 + j) * US;
                    wave.add(ev("Request", "httpRes", start, 2 * US, one(rids.get(j)), Map.of("replyTokenSize", (double)
                            outputDone)));
                    acc.e2e += start + 2 * US;
                }
            }
        }

        private static List<RequestRef> one(String rid) {
            return List.of(RequestRef.of(rid));
        }

        private ServiceEvent ev(
                String domain, String name, long start, Long dur, List<RequestRef> refs, Map<String, Double> metrics) {
            return new ServiceEvent(domain, name, start, dur, pid, "1", refs, metrics, null, null);
        }
    }
}
