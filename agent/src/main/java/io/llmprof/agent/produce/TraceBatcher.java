package io.llmprof.agent.produce;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Cuts each (rank, lane)'s ordered events into {@link TraceBatch} records. Boundaries depend only on the
 * events (a count, and an estimated-size cap that keeps records well under Kafka's default 1 MiB limit), so
 * re-reading a file yields the very same batches with the same {@code firstIndex}: that is what lets a
 * restarted agent resume by index. Before a GPU batch leaves, the same rank's pending host events leave as a
 * batch of their own. The last batch of every (rank, lane) has {@code endOfTrace=true} and may
 * be empty.
 */
public final class TraceBatcher implements OrderedSink {
    /**
     * Events per batch. Most of the streams app's cost per record is writing the run's state, so fewer, larger records
     * cost less; 2048 events of a kernel-heavy trace are 35-50 KB of protobuf, and the estimated-size cap below
     * usually cuts a batch of long kernel names first (about 1,600 events of bench live's trace). docs/benchmarks.md.
     */
    public static final int DEFAULT_BATCH_EVENTS = 2048;

    public static final int DEFAULT_MAX_BATCH_BYTES = 512 * 1024;

    /**
     * Largest event sent as it is (estimated); a batch is then at most {@code maxBytes + MAX_EVENT_BYTES}, under the
     * producer's 1 MiB {@code max.request.size} with the default batch cap.
     */
    public static final int MAX_EVENT_BYTES = 256 * 1024;

    private final String job;
    private final String run;
    private final String source;
    private final int maxEvents;
    private final int maxBytes;
    private final Consumer<TraceBatch> out;
    private final Consumer<InputProblem> problems;
    private final Map<String, Pending> pending = new HashMap<>();
    private Pending last;

    public TraceBatcher(String job, String run, String source, Consumer<TraceBatch> out) {
        this(job, run, source, DEFAULT_BATCH_EVENTS, DEFAULT_MAX_BATCH_BYTES, out, p -> {});
    }

    public TraceBatcher(
            String job,
            String run,
            String source,
            int maxEvents,
            int maxBytes,
            Consumer<TraceBatch> out,
            Consumer<InputProblem> problems) {
        this.job = Objects.requireNonNull(job, "job");
        this.run = Objects.requireNonNull(run, "run");
        this.source = Objects.requireNonNull(source, "source");
        if (maxEvents < 1 || maxBytes < 1) {
            throw new IllegalArgumentException("batch limits must be positive: " + maxEvents + ", " + maxBytes);
        }
        this.maxEvents = maxEvents;
        this.maxBytes = maxBytes;
        this.out = Objects.requireNonNull(out, "out");
        this.problems = Objects.requireNonNull(problems, "problems");
    }

    @Override
    public void event(String rank, Lane lane, long index, TraceEvent event) {
        Pending p = last;
        if (p == null || p.lane != lane || !p.rank.equals(rank)) {
            p = pending.computeIfAbsent(key(rank, lane), k -> new Pending(rank, lane));
            last = p;
        }
        if (p.events.isEmpty()) {
            p.firstIndex = index;
        } else if (index != p.firstIndex + p.events.size()) {
            throw new IllegalStateException("index " + index + " out of sequence for " + rank + "/" + lane);
        }
        int size = estimatedBytes(event);
        if (size > MAX_EVENT_BYTES) {
            event = cut(rank, lane, index, event, size);
            size = estimatedBytes(event);
        }
        p.events.add(event);
        p.bytes += size;
        p.next = index + 1;
        if (p.events.size() >= maxEvents || p.bytes >= maxBytes) {
            flush(p, false);
        }
    }

    @Override
    public void endOfTrace(String rank, Lane lane) {
        Pending p = pending.computeIfAbsent(key(rank, lane), k -> new Pending(rank, lane));
        flush(p, true);
        pending.remove(key(rank, lane));
        last = null;
    }

    @Override
    public void problem(InputProblem problem) {
        problems.accept(problem);
    }

    private void flush(Pending p, boolean endOfTrace) {
        if (p.lane == Lane.GPU) {
            // The rank's host events read so far go first: they hold the step markers and launch correlations
            // the streams app needs to place these GPU events. A host lane sparser than the GPU lane (a few
            // events per step against hundreds of kernels) would otherwise fill its batch only many steps
            // later. Still deterministic: it depends only on the order of the reader's events.
            Pending host = pending.get(key(p.rank, Lane.HOST));
            if (host != null && !host.events.isEmpty()) {
                flush(host, false);
            }
        }
        long first = p.events.isEmpty() ? p.next : p.firstIndex;
        TraceBatch batch = new TraceBatch(job, run, p.rank, p.lane, source, first, p.events, endOfTrace);
        p.events.clear(); // TraceBatch copied them
        p.bytes = 0;
        out.accept(batch);
    }

    /**
     * An upper bound of the event's size as JSON, so of its protobuf size too. Left as it is since the wire became
     * protobuf: a different estimate would move batch boundaries under a restarted agent's checkpoint.
     */
    static int estimatedBytes(TraceEvent e) {
        int n = 160 + e.name().length();
        if (e.inputDims() != null) {
            n += e.inputDims().length() + 16;
        }
        return n;
    }

    /** Characters of a name kept by {@link #cut}, and of the dead letter's preview of it. */
    static final int CUT_NAME_CHARS = 1024;

    /**
     * An event too large to travel (a name or input dims of hundreds of KB: a broken or hostile trace) would make
     * its batch a record Kafka refuses, losing the batch's other events. It goes as an event with its name cut and
     * without input dims, so the timeline and the index sequence stay whole, and is reported as bad input (counted,
     * an anomaly, a dead letter with the head of its name).
     */
    private TraceEvent cut(String rank, Lane lane, long index, TraceEvent e, int size) {
        String name = e.name();
        int dims = e.inputDims() == null ? 0 : e.inputDims().length();
        problems.accept(new InputProblem(
                AnomalyKind.INVALID_INPUT,
                source,
                index,
                "event " + index + " of rank " + rank + " (" + lane + ") is too large to send (about " + size
                        + " bytes: name " + name.length() + " characters, input dims " + dims
                        + "): sent with its name cut to " + CUT_NAME_CHARS + " characters and no input dims",
                name.substring(0, Math.min(CUT_NAME_CHARS, name.length()))));
        String shortName = name.length() > CUT_NAME_CHARS ? name.substring(0, CUT_NAME_CHARS) + "..." : name;
        return new TraceEvent(
                e.kind(),
                shortName,
                e.startNs(),
                e.durNs(),
                e.device(),
                e.stream(),
                e.correlation(),
                e.externalId(),
                null,
                e.graphId());
    }

    private static String key(String rank, Lane lane) {
        return rank + '\u0000' + lane.name();
    }

    private final class Pending {
        final String rank;
        final Lane lane;
        final List<TraceEvent> events = new ArrayList<>();
        long firstIndex;
        long next;
        int bytes;

        Pending(String rank, Lane lane) {
            this.rank = rank;
            this.lane = lane;
        }
    }
}
