package io.llmprof.streams.host;

import io.llmprof.events.TraceEvent;
import io.llmprof.events.host.HostDrillDown;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Eager kernels (not replayed from a CUDA / HIP graph) and where they were launched from, for the drill-down beside
 * the graph-coverage ratio: what a graph capture would have to cover.
 *
 * <p>Launch source: each host thread's open cpu_ops and annotations are its frames (step ranges excluded: they
 * enclose everything); a kernel launch call (not a graph launch) takes the innermost frame open on its thread at its
 * start ({@code cpu_op NAME} or {@code annotation NAME}), else {@value #NO_FRAME}. Python frames are not read (the
 * Kineto reader skips {@code python_function} events). A kernel is eager when it has no Nsight graph id and its
 * correlation is no graph launch; its source is its launch's, {@value #NO_LAUNCH} when no launch of it was seen (none
 * in the trace, or the bound below dropped it).
 *
 * <p>Needs the launch before its kernel (the host lane at or ahead of the GPU lane); a kernel that comes first
 * waits, up to {@value #MAX_PENDING} of them, until the host lane passes its start. Bounded: {@value #MAX_THREADS}
 * threads of at most {@value #MAX_DEPTH} frames, {@value #MAX_LAUNCHES} launches not matched yet (oldest dropped),
 * {@value #MAX_ENTRIES} (kernel, source) pairs counted by name (later pairs only in the totals).
 */
final class EagerLaunches {
    static final int MAX_THREADS = 256;
    static final int MAX_DEPTH = 64;
    static final int MAX_LAUNCHES = 4096;
    static final int MAX_PENDING = 4096;
    static final int MAX_ENTRIES = 128;
    static final int TOP = 10;
    static final String NO_FRAME = "(no enclosing cpu_op or annotation)";
    static final String NO_LAUNCH = "(launch not seen)";

    /** An open frame: its end and the source text it gives. */
    record Frame(long end, String source) {}

    /** A kernel waiting for the host lane: correlation, start, duration, name. */
    record Pending(long corr, long start, long durNs, String name) {}

    record Key(String kernel, String source) {}

    /** Host thread -> open frames, outermost first; LRU. */
    final LinkedHashMap<Long, ArrayDeque<Frame>> stacks = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, ArrayDeque<Frame>> eldest) {
            return size() > MAX_THREADS;
        }
    };
    /** Eager launch correlation -> source, oldest first. */
    final LinkedHashMap<Long, String> launches = new LinkedHashMap<>();

    final ArrayDeque<Pending> pending = new ArrayDeque<>();
    /** (kernel, source) -> {kernels, ns}, in first-seen order. */
    final LinkedHashMap<Key, long[]> table = new LinkedHashMap<>();

    long kernels;
    long ns;
    /** Kernels and time of pairs beyond {@link #MAX_ENTRIES}. */
    long overflowKernels;

    long overflowNs;

    /** A host-lane event in start order; {@code stepRange}: an annotation that is (or may be) a step window. */
    void host(TraceEvent e, boolean stepRange, int apiFlags) {
        long thread = e.stream() == null ? -1 : e.stream();
        switch (e.kind()) {
            case CPU_OP, USER_ANNOTATION -> {
                if (stepRange) {
                    return;
                }
                ArrayDeque<Frame> stack = stacks.computeIfAbsent(thread, t -> new ArrayDeque<>());
                popEnded(stack, e.startNs());
                if (stack.size() < MAX_DEPTH) {
                    String kind = e.kind() == TraceEvent.Kind.CPU_OP ? "cpu_op " : "annotation ";
                    stack.addLast(new Frame(e.endNs(), kind + e.name()));
                }
            }
            case RUNTIME -> {
                if (!ApiNames.is(apiFlags, ApiNames.LAUNCH)
                        || ApiNames.is(apiFlags, ApiNames.GRAPH_LAUNCH)
                        || e.correlation() == null) {
                    return;
                }
                ArrayDeque<Frame> stack = stacks.get(thread);
                String source = NO_FRAME;
                if (stack != null) {
                    popEnded(stack, e.startNs());
                    if (!stack.isEmpty()) {
                        source = stack.peekLast().source();
                    }
                }
                launches.put(e.correlation(), source);
                if (launches.size() > MAX_LAUNCHES) {
                    Iterator<Long> oldest = launches.keySet().iterator();
                    oldest.next();
                    oldest.remove();
                }
            }
            default -> {}
        }
    }

    private static void popEnded(ArrayDeque<Frame> stack, long t) {
        while (!stack.isEmpty() && stack.peekLast().end() < t) {
            stack.removeLast();
        }
    }

    /**
     * A kernel without an Nsight graph id ({@code graph}: its correlation is a graph launch seen so far); {@code
     * hostPassed}: the host lane passed its start, so its launch, if any, was seen.
     */
    void kernel(long corr, long start, long durNs, String name, boolean graph, boolean hostPassed) {
        if (graph) {
            return;
        }
        if (corr != Interval.NO_CORR && launches.containsKey(corr)) {
            count(name, launches.remove(corr), durNs);
        } else if (hostPassed || corr == Interval.NO_CORR) {
            count(name, NO_LAUNCH, durNs);
        } else {
            if (pending.size() >= MAX_PENDING) {
                resolve(pending.removeFirst(), null);
            }
            pending.addLast(new Pending(corr, start, durNs, name));
        }
    }

    /** The host lane reached {@code hostClock}: kernels starting at or before it are decided. */
    void hostPassed(long hostClock, LongRingSet graphCorr) {
        while (!pending.isEmpty() && pending.peekFirst().start() <= hostClock) {
            resolve(pending.removeFirst(), graphCorr);
        }
    }

    private void resolve(Pending p, LongRingSet graphCorr) {
        if (graphCorr != null && graphCorr.contains(p.corr())) {
            return;
        }
        String source = launches.remove(p.corr());
        count(p.name(), source == null ? NO_LAUNCH : source, p.durNs());
    }

    private void count(String name, String source, long durNs) {
        kernels++;
        ns += durNs;
        Key key = new Key(name, source);
        long[] v = table.get(key);
        if (v == null) {
            if (table.size() >= MAX_ENTRIES) {
                overflowKernels++;
                overflowNs += durNs;
                return;
            }
            v = new long[2];
            table.put(key, v);
        }
        v[0]++;
        v[1] += durNs;
    }

    /** The {@value #TOP} pairs with the most GPU time, and what the rest adds up to. */
    HostDrillDown.EagerKernels report() {
        List<Map.Entry<Key, long[]>> entries = new ArrayList<>(table.entrySet());
        entries.sort(Comparator.comparingLong((Map.Entry<Key, long[]> e) -> -e.getValue()[1])
                .thenComparingLong(e -> -e.getValue()[0])
                .thenComparing(e -> e.getKey().kernel())
                .thenComparing(e -> e.getKey().source()));
        List<HostDrillDown.EagerKernel> top = new ArrayList<>();
        long restKernels = overflowKernels;
        long restNs = overflowNs;
        for (int i = 0; i < entries.size(); i++) {
            Map.Entry<Key, long[]> e = entries.get(i);
            if (i < TOP) {
                top.add(new HostDrillDown.EagerKernel(
                        e.getKey().kernel(), e.getKey().source(), e.getValue()[0], e.getValue()[1]));
            } else {
                restKernels += e.getValue()[0];
                restNs += e.getValue()[1];
            }
        }
        long restPairs = Math.max(0, entries.size() - TOP) + (overflowKernels > 0 ? 1 : 0);
        return new HostDrillDown.EagerKernels(kernels, ns, top, restPairs, restKernels, restNs, overflowKernels > 0);
    }
}
