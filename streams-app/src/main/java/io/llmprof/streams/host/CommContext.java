package io.llmprof.streams.host;

import io.llmprof.events.TraceEvent;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.category.Categorizer;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;

/**
 * Communication by launch context, for M5 and the communication caveat: a kernel launched inside a cpu_op or
 * annotation that the launch-context rules of profiles.json put in a communication category ({@code nccl:*},
 * {@code c10d::*}, {@code symm_mem::*}, {@code deep_ep*}, vLLM/TensorRT-LLM/SGLang all-reduce and MoE all-to-all
 * ops) is communication whatever its name, as the layer categories say. A graph-replayed kernel has no launch op:
 * it is communication when the run's eager launches of the same name all were. The name rule ({@link
 * HostConfig#commPattern()}) still applies on top, so nothing counted by name before is lost.
 *
 * <p>Needs the launch before its kernel (the host lane at or ahead of the GPU lane, as Kineto files and live
 * capture have it); a kernel that arrives first is judged by its name. Bounded: {@value #MAX_THREADS} host threads,
 * {@value #MAX_LAUNCHES} unmatched communication launches, {@value #MAX_NAMES} learned names, oldest dropped.
 */
final class CommContext {
    static final int MAX_THREADS = 256;
    static final int MAX_LAUNCHES = 16_384;
    static final int MAX_NAMES = 1_024;

    private final Categorizer rules =
            SegmenterConfig.resolve(null, "generic", null, null).categorizer();
    /** Host thread -> latest end of a communication frame on it; frames arrive in start order. */
    final LinkedHashMap<Long, Long> commEnd = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Long> eldest) {
            return size() > MAX_THREADS;
        }
    };
    /** Correlations of launches made inside a communication frame whose kernel has not arrived. */
    final LinkedHashSet<Long> launches = new LinkedHashSet<>();
    /** Eager kernel names: true while every launch of the name was inside a communication frame. */
    final LinkedHashMap<String, Boolean> learned = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
            return size() > MAX_NAMES;
        }
    };
    /** Highest launch correlation seen on the host lane. */
    long maxLaunchCorr = Long.MIN_VALUE;
    /** Kernels found communication by their launch context or learned name, not by the name rule. */
    long byContext;

    /** A host-lane event, in start order. */
    void host(TraceEvent e) {
        long thread = e.stream() == null ? -1 : e.stream();
        switch (e.kind()) {
            case CPU_OP, USER_ANNOTATION -> {
                if (rules.isCommunication(rules.contextCategoryOf(e.name()))) {
                    commEnd.merge(thread, e.endNs(), Math::max);
                }
            }
            case RUNTIME -> {
                Long corr = e.correlation();
                if (corr == null) {
                    return;
                }
                maxLaunchCorr = Math.max(maxLaunchCorr, corr);
                Long end = commEnd.get(thread);
                if (end != null && e.startNs() <= end) {
                    launches.add(corr);
                    if (launches.size() > MAX_LAUNCHES) {
                        Iterator<Long> oldest = launches.iterator();
                        oldest.next();
                        oldest.remove();
                    }
                }
            }
            default -> {}
        }
    }

    /**
     * Whether a kernel is communication by its launch context ({@code corr}: its correlation, null for none;
     * {@code graph}: replayed by a graph launch, so no launch op).
     */
    boolean kernel(String name, Long corr, boolean graph) {
        if (graph) {
            return Boolean.TRUE.equals(learned.get(name));
        }
        if (corr == null) {
            return false;
        }
        if (launches.remove(corr)) {
            learned.merge(name, true, Boolean::logicalAnd);
            return true;
        }
        if (corr <= maxLaunchCorr) {
            learned.put(name, false); // launched outside every communication frame
        }
        return false;
    }
}
