package io.llmprof.streams.category;

import com.carrotsearch.hppc.LongArrayList;
import com.carrotsearch.hppc.LongIntHashMap;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.host.ApiNames;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A kernel's category from what launched it (rules: docs/analysis.md "Kernel categories"). Fed one rank's host lane
 * in start order, it keeps each thread's open cpu_ops and annotations (the launch context) and, for each kernel
 * launch, what that context says: the innermost frame matching a communication rule ({@code nccl:all_reduce},
 * {@code c10d::*}, {@code symm_mem::*}, a custom all-reduce op), else the innermost frame matching any other
 * launch-context rule ({@code vllm::moe_forward}, {@code _C::fused_add_rms_norm}, {@code aten::mm}, ...), else
 * nothing. The kernel (GPU lane, its launch already seen) then gets, in order:
 *
 * <ol>
 *   <li>the category of a name rule marked {@code over_context} (a profile author's explicit choice);
 *   <li>the communication category of its context;
 *   <li>the communication category of its name (a DeepEP kernel inside {@code vllm::moe_forward} is still
 *       communication);
 *   <li>any other category of its context;
 *   <li>without a launch op (replayed from a CUDA/HIP graph, or no launch event in the trace): the category learned
 *       for the same kernel name from this run's eager launches, when they all agreed;
 *   <li>its name rules ({@code other} when none matches).
 * </ol>
 *
 * <p>Bounded whatever the run's length: {@value #MAX_THREADS} threads of at most {@value #MAX_DEPTH} frames, {@value
 * #MAX_LAUNCHES} launches waiting for their kernel (a launch is dropped once a kernel starting {@value #PRUNE_LAG_NS}
 * ns after it arrived: launches made during graph capture never get a kernel; kernels on a communication stream may
 * run long after launches of other streams, so the lag is in time, not in correlations), {@value #MAX_RECENT_OPS}
 * cpu_ops by External id, {@value #MAX_LEARNED} learned names (later names are not learned); runtime call names are
 * classified through {@link ApiNames}' bounded cache. Its whole state is
 * {@link #state()}. Not thread-safe (one per segmenter).
 */
public final class LaunchContext {
    /** Launched eagerly, but no rule matched its context (also: a learned name seen in no rule's context). */
    public static final int NONE = -1;
    /** Launched by a graph launch: no launch op. */
    public static final int GRAPH = -2;
    /** A learned name whose eager launches disagreed. */
    public static final int AMBIGUOUS = -3;

    static final int MAX_THREADS = 256;
    static final int MAX_DEPTH = 64;
    static final int MAX_LAUNCHES = 16_384;
    static final long PRUNE_LAG_NS = 10_000_000_000L;
    static final int MAX_RECENT_OPS = 1_024;
    static final int MAX_LEARNED = 4_096;

    /** Where a kernel's category came from. */
    public enum Source {
        CONTEXT,
        LEARNED,
        NAME,
        /** No rule matched the name and no launch context said anything: {@code other}. */
        OTHER
    }

    // frame row
    private static final int F_START = 0;
    private static final int F_END = 1;
    private static final int F_COMM = 2;
    private static final int F_CTX = 3;
    private static final int F_OWN_COMM = 4;
    private static final int F_OWN_CTX = 5;
    private static final int F_HAS_EXT = 6;
    private static final int F_EXT = 7;

    private final Categorizer rules;
    private final NameIds categories = new NameIds();
    private final LinkedHashMap<Long, ArrayDeque<long[]>> stacks = new LinkedHashMap<>(16, 0.75f, true);
    /**
     * The entry of {@link #stacks} used last (null: none): asked again for the same thread, as a thread's ops come in
     * runs, it is the one a lookup would find, and looking it up again would leave the access order as it is.
     */
    private ArrayDeque<long[]> lastStack;

    private long lastThread;
    /** correlation -> {code, launch start}, in host (start) order. */
    private final LongFifoMap launches = new LongFifoMap(2, 1024);
    /** External id -> {code, start, end} of the latest cpu_ops. */
    private final LongFifoMap recentOps = new LongFifoMap(3, MAX_RECENT_OPS + 1);

    /** Learned name hash -> code; {@link #learnedOrder} keeps the hashes in the order first learned. */
    private final LongIntHashMap learned = new LongIntHashMap();

    private final LongArrayList learnedOrder = new LongArrayList();
    /** Runtime call names classified once each (not state: derived from the name). */
    private final ApiNames api = new ApiNames();

    private final Map<String, Long> hashes = new LinkedHashMap<>(256, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
            return size() > MAX_LEARNED;
        }
    };
    private long maxDelivered = Long.MIN_VALUE;
    private long latestKernelStartNs = Long.MIN_VALUE;
    private long hostWatermarkNs = Long.MIN_VALUE;
    private long lost;
    private final long[] tallies = new long[2 * Source.values().length];
    /** Category index -> {kernels, ns}. */
    private final Map<Integer, long[]> byCategory = new LinkedHashMap<>();

    public LaunchContext(Categorizer rules) {
        this.rules = rules;
    }

    // ---------------------------------------------------------------- host lane

    /** A host-lane event, in start order: cpu_ops and annotations open frames, kernel launches are recorded. */
    public void host(TraceEvent e) {
        hostWatermarkNs = Math.max(hostWatermarkNs, e.startNs());
        switch (e.kind()) {
            case CPU_OP, USER_ANNOTATION -> frame(e);
            case RUNTIME -> {
                if (e.correlation() != null) {
                    launch(e);
                }
            }
            default -> {}
        }
    }

    private void frame(TraceEvent e) {
        long thread = e.stream() == null ? -1 : e.stream();
        ArrayDeque<long[]> stack = stack(thread, true);
        long start = e.startNs();
        long end = e.endNs();
        popEnded(stack, start);
        // Equal starts may arrive child first: a shorter frame of the same start goes back on top of this one.
        List<long[]> inner = null;
        while (!stack.isEmpty() && stack.peekLast()[F_START] == start && stack.peekLast()[F_END] < end) {
            if (inner == null) {
                inner = new ArrayList<>();
            }
            inner.add(0, stack.pollLast());
        }
        String own = rules.contextCategoryOf(e.name());
        int ownId = own == null ? NONE : categories.id(own);
        boolean comm = rules.isCommunication(own);
        Long ext = e.kind() == TraceEvent.Kind.CPU_OP ? e.externalId() : null;
        remember(push(stack, start, end, comm ? ownId : NONE, own == null || comm ? NONE : ownId, ext));
        if (inner != null) {
            for (long[] i : inner) {
                remember(push(stack, i[F_START], i[F_END], (int) i[F_OWN_COMM], (int) i[F_OWN_CTX], external(i)));
            }
        }
    }

    private static Long external(long[] frame) {
        return frame[F_HAS_EXT] == 0 ? null : frame[F_EXT];
    }

    /** A pushed cpu_op is found by its External id for launches (its context as of now, with its parents). */
    private void remember(long[] f) {
        if (f == null || f[F_HAS_EXT] == 0) {
            return;
        }
        recentOps.putLast(f[F_EXT], code(f), f[F_START], f[F_END]);
        if (recentOps.size() > MAX_RECENT_OPS) {
            recentOps.removeEldest();
        }
    }

    /**
     * Pushes a frame whose own rules gave {@code ownComm} / {@code ownCtx} (or {@link #NONE}); its effective values
     * inherit the innermost enclosing ones. Rows keep the own values (and the External id) to re-push them.
     */
    private static long[] push(ArrayDeque<long[]> stack, long start, long end, int ownComm, int ownCtx, Long ext) {
        if (stack.size() >= MAX_DEPTH) {
            return null;
        }
        long[] parent = stack.peekLast();
        long comm = ownComm != NONE ? ownComm : parent == null ? NONE : parent[F_COMM];
        long ctx = ownCtx != NONE ? ownCtx : parent == null ? NONE : parent[F_CTX];
        long[] f = {start, end, comm, ctx, ownComm, ownCtx, ext == null ? 0 : 1, ext == null ? 0 : ext};
        stack.addLast(f);
        return f;
    }

    private static void popEnded(ArrayDeque<long[]> stack, long t) {
        while (!stack.isEmpty() && stack.peekLast()[F_END] <= t) {
            stack.pollLast();
        }
    }

    private ArrayDeque<long[]> stack(long thread, boolean create) {
        if (lastStack != null && thread == lastThread) {
            return lastStack;
        }
        ArrayDeque<long[]> s = stacks.get(thread);
        if (s == null && create) {
            if (stacks.size() >= MAX_THREADS) {
                Iterator<Map.Entry<Long, ArrayDeque<long[]>>> it =
                        stacks.entrySet().iterator();
                it.next();
                it.remove(); // the least recently used thread
                lastStack = null;
            }
            s = new ArrayDeque<>();
            stacks.put(thread, s);
        }
        if (s != null) {
            lastThread = thread;
            lastStack = s;
        }
        return s;
    }

    private static int code(long[] frame) {
        return (int) (frame[F_COMM] != NONE ? frame[F_COMM] : frame[F_CTX]);
    }

    private void launch(TraceEvent e) {
        int kind = api.launchKind(e.name());
        if (kind == 0) {
            return;
        }
        int code;
        if (kind == ApiNames.GRAPH_LAUNCH) {
            code = GRAPH;
        } else {
            // Kineto's External id names the launching cpu_op; older traces reuse the correlation there, so the op
            // must also hold the launch in time. Else the innermost open frame of the launching thread.
            int op = e.externalId() == null ? -1 : recentOps.slot(e.externalId());
            if (op >= 0 && recentOps.value(op, 1) <= e.startNs() && e.startNs() < recentOps.value(op, 2)) {
                code = (int) recentOps.value(op, 0);
            } else {
                ArrayDeque<long[]> stack = stack(e.stream() == null ? -1 : e.stream(), false);
                if (stack != null) {
                    popEnded(stack, e.startNs());
                }
                code = stack == null || stack.isEmpty() ? NONE : code(stack.peekLast());
            }
        }
        launches.putLast(e.correlation(), code, e.startNs());
        if (launches.size() > MAX_LAUNCHES) {
            if (launches.value(launches.eldest(), 0) != GRAPH) {
                lost++;
            }
            launches.removeEldest();
        }
    }

    // ---------------------------------------------------------------- GPU lane

    /**
     * Whether the launch of a kernel starting at {@code kernelStartNs} may still arrive: it has not, and the host
     * lane (in start order) has not yet passed the kernel's start, before which any launch of it starts. Launches
     * on several threads do not take correlation ids in exactly their start order, so "the host lane passed a
     * higher correlation" is not enough.
     */
    public boolean mayStillLaunch(long correlation, long kernelStartNs) {
        return hostWatermarkNs < kernelStartNs && !launches.containsKey(correlation);
    }

    /**
     * The category of a kernel whose launch the host lane has passed (or never will show).
     *
     * @param canonical the kernel's canonical name
     * @param nameCategory what the name rules say ({@link Categorizer#categoryOf(String)})
     * @param correlation the kernel's launch correlation, null when it has none
     * @param startNs its start (launches made long before it are dropped)
     * @param durNs its duration (for the per-source tallies)
     */
    public String categorize(String canonical, String nameCategory, Long correlation, long startNs, long durNs) {
        return categorize(canonical, nameCategory, false, correlation, startNs, durNs);
    }

    /**
     * As {@link #categorize(String, String, Long, long, long)}; {@code nameOverContext}: the name rule that gave
     * {@code nameCategory} is marked {@code over_context} and wins over the launch context.
     */
    public String categorize(
            String canonical,
            String nameCategory,
            boolean nameOverContext,
            Long correlation,
            long startNs,
            long durNs) {
        return categorize(
                canonical,
                nameCategory,
                nameOverContext,
                correlation != null,
                correlation == null ? 0 : correlation,
                startNs,
                durNs);
    }

    /**
     * As {@link #categorize(String, String, boolean, Long, long, long)}, the correlation unboxed ({@code
     * hasCorrelation} false: none).
     */
    public String categorize(
            String canonical,
            String nameCategory,
            boolean nameOverContext,
            boolean hasCorrelation,
            long correlation,
            long startNs,
            long durNs) {
        Integer code = null;
        if (hasCorrelation) {
            long c = correlation;
            int launch = launches.slot(c);
            code = launch < 0 ? null : (int) launches.value(launch, 0);
            if (code != null && code != GRAPH) {
                launches.remove(c); // an eager launch runs one kernel
            }
            maxDelivered = Math.max(maxDelivered, c);
        }
        if (startNs > latestKernelStartNs) {
            latestKernelStartNs = startNs;
            prune();
        }
        String category;
        Source source;
        String context = code != null && code >= 0 ? categories.name(code) : null;
        if (nameOverContext) {
            category = nameCategory;
            source = Source.NAME;
        } else if (context != null && rules.isCommunication(context)) {
            category = context;
            source = Source.CONTEXT;
        } else if (rules.isCommunication(nameCategory)) {
            category = nameCategory;
            source = Source.NAME;
        } else if (context != null) {
            category = context;
            source = Source.CONTEXT;
        } else if ((code == null || code == GRAPH) && learnedCategory(canonical) != null) {
            category = learnedCategory(canonical);
            source = Source.LEARNED;
        } else {
            category = nameCategory;
            source = Categorizer.OTHER.equals(nameCategory) ? Source.OTHER : Source.NAME;
        }
        if (code != null && code != GRAPH) {
            learn(canonical, code);
        }
        tallies[2 * source.ordinal()]++;
        tallies[2 * source.ordinal() + 1] += durNs;
        long[] t = byCategory.computeIfAbsent(categories.id(category), k -> new long[2]);
        t[0]++;
        t[1] += durNs;
        return category;
    }

    /** Drops launches made more than {@link #PRUNE_LAG_NS} before the latest kernel's start (host order = time). */
    private void prune() {
        while (!launches.isEmpty() && launches.value(launches.eldest(), 1) < latestKernelStartNs - PRUNE_LAG_NS) {
            launches.removeEldest();
        }
    }

    private String learnedCategory(String canonical) {
        long h = hash(canonical);
        if (!learned.containsKey(h)) {
            return null;
        }
        int c = learned.get(h);
        return c >= 0 ? categories.name(c) : null;
    }

    private void learn(String canonical, int code) {
        long h = hash(canonical);
        if (!learned.containsKey(h)) {
            if (learned.size() < MAX_LEARNED) {
                learned.put(h, code);
                learnedOrder.add(h);
            }
        } else if (learned.get(h) != code) {
            learned.put(h, AMBIGUOUS);
        }
    }

    private long hash(String canonical) {
        Long h = hashes.get(canonical);
        if (h == null) {
            h = fnv1a64(canonical);
            hashes.put(canonical, h);
        }
        return h;
    }

    /** FNV-1a, 64 bits, over the UTF-8 bytes: stable across JVMs, so a stored state stays valid. */
    static long fnv1a64(String s) {
        long h = 0xcbf29ce484222325L;
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            h ^= b & 0xff;
            h *= 0x100000001b3L;
        }
        return h;
    }

    // ---------------------------------------------------------------- reporting

    /** Kernels categorised from {@code source} so far. */
    public long kernels(Source source) {
        return tallies[2 * source.ordinal()];
    }

    /** Their total duration, ns. */
    public long durationNs(Source source) {
        return tallies[2 * source.ordinal() + 1];
    }

    /** Kernels categorised so far per category: {kernels, ns}, in first-seen order. */
    public Map<String, long[]> byCategory() {
        Map<String, long[]> out = new LinkedHashMap<>();
        byCategory.forEach((id, t) -> out.put(categories.name(id), t.clone()));
        return out;
    }

    /** Launches dropped by the bound before their kernel arrived (those kernels fell back to their names). */
    public long lost() {
        return lost;
    }

    // ---------------------------------------------------------------- state

    public LaunchContextState state() {
        List<long[]> frames = new ArrayList<>();
        stacks.forEach((thread, stack) -> {
            for (long[] f : stack) {
                frames.add(
                        new long[] {thread, f[F_START], f[F_END], f[F_OWN_COMM], f[F_OWN_CTX], f[F_HAS_EXT], f[F_EXT]});
            }
        });
        List<Long> t = new ArrayList<>(tallies.length);
        for (long v : tallies) {
            t.add(v);
        }
        List<long[]> launchRows = new ArrayList<>(launches.size());
        for (int s = launches.eldest(); s >= 0; s = launches.newer(s)) {
            launchRows.add(new long[] {launches.key(s), launches.value(s, 0), launches.value(s, 1)});
        }
        List<long[]> perCategory = new ArrayList<>(byCategory.size());
        byCategory.forEach((id, v) -> perCategory.add(new long[] {id, v[0], v[1]}));
        return new LaunchContextState(
                categories.names(),
                frames,
                launchRows,
                rows(recentOps),
                learnedPairs(),
                maxDelivered,
                latestKernelStartNs,
                hostWatermarkNs,
                lost,
                t,
                perCategory);
    }

    private static List<long[]> rows(LongFifoMap map) {
        List<long[]> out = new ArrayList<>(map.size());
        for (int s = map.eldest(); s >= 0; s = map.newer(s)) {
            out.add(new long[] {map.key(s), map.value(s, 0), map.value(s, 1), map.value(s, 2)});
        }
        return out;
    }

    private List<long[]> learnedPairs() {
        List<long[]> out = new ArrayList<>(learnedOrder.size());
        for (int i = 0; i < learnedOrder.size(); i++) {
            long h = learnedOrder.get(i);
            out.add(new long[] {h, learned.get(h)});
        }
        return out;
    }

    public static LaunchContext fromState(Categorizer rules, LaunchContextState s) {
        LaunchContext c = new LaunchContext(rules);
        s.categories().forEach(c.categories::id);
        for (long[] f : s.frames()) {
            push(c.stack(f[0], true), f[1], f[2], (int) f[3], (int) f[4], f.length > 6 && f[5] != 0 ? f[6] : null);
        }
        s.launches().forEach(r -> c.launches.putLast(r[0], r[1], r.length > 2 ? r[2] : Long.MIN_VALUE));
        s.recentOps().forEach(r -> c.recentOps.putLast(r[0], r[1], r[2], r[3]));
        s.learned().forEach(r -> {
            if (!c.learned.containsKey(r[0])) {
                c.learnedOrder.add(r[0]);
            }
            c.learned.put(r[0], (int) r[1]);
        });
        c.maxDelivered = s.maxDelivered();
        c.latestKernelStartNs = s.latestKernelStartNs();
        c.hostWatermarkNs = s.hostWatermarkNs();
        c.lost = s.lost();
        for (int i = 0; i < Math.min(c.tallies.length, s.tallies().size()); i++) {
            c.tallies[i] = s.tallies().get(i);
        }
        s.byCategory().forEach(r -> c.byCategory.put((int) r[0], new long[] {r[1], r[2]}));
        return c;
    }
}
