package io.llmprof.streams.boundary;

import io.llmprof.events.TraceEvent;
import io.llmprof.streams.category.KernelNames;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * Finds the anchor kernel and/or the layer count on a warm-up window (rules in docs/analysis.md,
 * "Anchor auto-detection" and "Layer-count detection"). Works on canonical names of kernels only
 * (memcpy / memset never anchor).
 */
final class AnchorDetector {
    /** Spacing within [LOW, HIGH] x the typical spacing counts as regular (vLLM alternates 17 / 18 kernels). */
    static final double LOW = 0.75;

    static final double HIGH = 1.33;
    static final double MIN_REGULAR_FRACTION = 0.6;
    static final double SAME_PERIOD = 1.15;

    /** Outcome: anchor and layer count, or why not. */
    record Result(String anchor, Integer numLayers, List<String> notes, String failure) {
        boolean ok() {
            return failure == null;
        }

        static Result fail(String why) {
            return new Result(null, null, List.of(), why);
        }
    }

    private record Candidate(int id, int count, int period, double regular, int firstPos) {}

    private AnchorDetector() {}

    /**
     * @param atEnd the window is the rest of the trace: its last marked step is whole (otherwise it may go on
     *     past the window and is not counted)
     */
    static Result detect(
            List<String> names,
            List<long[]> warmup,
            String knownAnchor,
            Integer knownN,
            int blocksPerLayer,
            boolean atEnd) {
        List<long[]> kernels = warmup.stream()
                .filter(r -> r[Rows.W_KIND] == TraceEvent.Kind.KERNEL.ordinal())
                .toList();
        int[] seq = kernels.stream().mapToInt(r -> (int) r[Rows.W_NAME]).toArray();
        long[] steps = kernels.stream()
                .mapToLong(r -> r.length > Rows.W_STEP ? r[Rows.W_STEP] : StepTracker.ANCHOR)
                .toArray();
        if (seq.length == 0) {
            return Result.fail("no kernels in the first " + warmup.size() + " GPU events");
        }
        List<String> notes = new ArrayList<>();
        String anchorRegex = knownAnchor;
        int[] anchorPos;
        if (knownAnchor == null) {
            Candidate c = chooseAnchor(names, seq);
            if (c == null) {
                return Result.fail("no kernel repeats at a regular per-layer period in the first " + seq.length
                        + " kernels; pass --anchor-kernel REGEX (and --num-layers N)");
            }
            anchorRegex = KernelNames.exactRegex(names.get(c.id()));
            anchorPos = positions(seq, id -> id == c.id());
            notes.add("anchor auto-detected: " + names.get(c.id()) + " (" + c.count() + " in the first " + seq.length
                    + " kernels, one every " + c.period() + " kernels)");
        } else {
            Pattern p = Pattern.compile(knownAnchor);
            boolean[] match = new boolean[names.size()];
            for (int i = 0; i < names.size(); i++) {
                match[i] = p.matcher(names.get(i)).find();
            }
            anchorPos = positions(seq, id -> match[id]);
            if (anchorPos.length == 0) {
                return Result.fail("anchor " + knownAnchor + " matched none of the first " + seq.length + " kernels");
            }
        }
        Integer n = knownN;
        if (n == null) {
            int anchorsPerPass = markedStepAnchors(steps, anchorPos, atEnd, notes);
            if (anchorsPerPass < 1) {
                anchorsPerPass = layerAnchors(names, seq, anchorPos, blocksPerLayer, notes);
            }
            if (anchorsPerPass < 1) {
                return Result.fail("anchor " + anchorRegex + " seen " + anchorPos.length
                        + " time(s): too few to infer the layer count; pass --num-layers N");
            }
            n = Math.max(1, anchorsPerPass / blocksPerLayer);
            if (anchorsPerPass % blocksPerLayer != 0) {
                notes.add(anchorsPerPass + " anchors per pass is not a multiple of " + blocksPerLayer
                        + " blocks per layer");
            }
            notes.add("layers detected: " + n);
        }
        return new Result(anchorRegex, n, notes, null);
    }

    private static int[] positions(int[] seq, java.util.function.IntPredicate isAnchor) {
        return java.util.stream.IntStream.range(0, seq.length)
                .filter(i -> isAnchor.test(seq[i]))
                .toArray();
    }

    /**
     * The anchor: a kernel that runs once per layer. Candidates repeat at least 3 times with a regular
     * spacing (in kernels); the layer period is the spacing most candidates share; among the candidates
     * at that period with (nearly) the highest count, the one that starts a layer after a pass boundary
     * (a stretch longer than a layer without any candidate) most often wins, else the first one seen.
     */
    private static Candidate chooseAnchor(List<String> names, int[] seq) {
        Map<Integer, List<Integer>> pos = new HashMap<>();
        for (int i = 0; i < seq.length; i++) {
            pos.computeIfAbsent(seq[i], k -> new ArrayList<>()).add(i);
        }
        List<Candidate> cands = new ArrayList<>();
        for (Map.Entry<Integer, List<Integer>> e : pos.entrySet()) {
            List<Integer> p = e.getValue();
            if (p.size() < 3) {
                continue;
            }
            long[] sp = new long[p.size() - 1];
            for (int i = 1; i < p.size(); i++) {
                sp[i - 1] = p.get(i) - p.get(i - 1);
            }
            long med = Rows.median(sp);
            if (med < 2) {
                continue; // back-to-back repeats (loops over experts, chunks) are not layers
            }
            int regular = 0;
            for (long s : sp) {
                if (s >= LOW * med && s <= HIGH * med) {
                    regular++;
                }
            }
            double frac = (double) regular / sp.length;
            if (frac >= MIN_REGULAR_FRACTION) {
                cands.add(new Candidate(e.getKey(), p.size(), (int) med, frac, p.get(0)));
            }
        }
        if (cands.isEmpty()) {
            return null;
        }
        // The layer period: the spacing shared by the most candidates (within 15%).
        Candidate best = null;
        int bestSupport = -1;
        long bestWeight = -1;
        for (Candidate c : cands) {
            int support = 0;
            long weight = 0;
            for (Candidate o : cands) {
                if (samePeriod(c.period(), o.period())) {
                    support++;
                    weight += o.count();
                }
            }
            if (support > bestSupport
                    || (support == bestSupport && weight > bestWeight)
                    || (support == bestSupport && weight == bestWeight && c.period() < best.period())) {
                best = c;
                bestSupport = support;
                bestWeight = weight;
            }
        }
        int period = best.period();
        List<Candidate> atPeriod =
                cands.stream().filter(c -> samePeriod(period, c.period())).toList();
        int maxCount = atPeriod.stream().mapToInt(Candidate::count).max().orElse(0);
        List<Candidate> top = atPeriod.stream()
                .filter(c -> c.count() >= 0.9 * maxCount)
                .sorted(Comparator.comparingInt(Candidate::firstPos))
                .toList();
        // Phase: which candidate comes first in a layer. Pass boundaries hold rare kernels (lm_head, sampling,
        // embedding: less than once per 4 layers); the candidate right after them starts layer 0, weighted by
        // how many rare kernels precede it, so that a stray one-off kernel inside a layer cannot win.
        Map<Integer, Integer> counts = new HashMap<>();
        for (int id : seq) {
            counts.merge(id, 1, Integer::sum);
        }
        Set<Integer> topIds = new HashSet<>();
        top.forEach(c -> topIds.add(c.id()));
        Map<Integer, Integer> follows = new HashMap<>();
        int rareSince = 0;
        for (int id : seq) {
            if (topIds.contains(id)) {
                if (rareSince > 0) {
                    follows.merge(id, rareSince, Integer::sum);
                }
                rareSince = 0;
            } else if ((long) counts.get(id) * 4 < maxCount) {
                rareSince++;
            }
        }
        if (follows.isEmpty()) {
            return top.get(0); // no pass boundary seen: the first candidate seen starts the layer
        }
        return top.stream()
                .max(Comparator.comparingInt((Candidate c) -> follows.getOrDefault(c.id(), 0))
                        .thenComparingInt(Candidate::count)
                        .thenComparing(
                                Comparator.comparingInt(Candidate::firstPos).reversed()))
                .orElseThrow();
    }

    private static boolean samePeriod(int a, int b) {
        return a <= b * SAME_PERIOD && b <= a * SAME_PERIOD;
    }

    /**
     * Anchors per pass: split the anchor occurrences into runs at pass boundaries (an irregular block that
     * holds a kernel rarer than once per 4 layers: lm_head, sampling, embedding), then take the most common
     * length of runs bounded by boundaries on both sides (ties: the longer), else the longest run bounded on
     * one side, else the longest run. A run that merely repeats twice as long is never preferred.
     */
    private static int layerAnchors(List<String> names, int[] seq, int[] a, int bpl, List<String> notes) {
        if (a.length < 2) {
            return 0;
        }
        Map<Integer, Integer> counts = new HashMap<>();
        for (int id : seq) {
            counts.merge(id, 1, Integer::sum);
        }
        Set<Integer> layerNames = new HashSet<>();
        counts.forEach((id, c) -> {
            if ((long) c * 4 * bpl >= a.length) {
                layerNames.add(id);
            }
        });
        long[] sp = new long[a.length - 1];
        for (int i = 1; i < a.length; i++) {
            sp[i - 1] = a[i] - a[i - 1];
        }
        long med = Rows.median(sp);
        List<int[]> runs = new ArrayList<>(); // {length, startBounded, endBounded}
        int runStart = 0;
        boolean startBounded = hasRare(seq, 0, a[0], layerNames);
        for (int j = 0; j < sp.length; j++) {
            boolean irregular = bpl > 1 || sp[j] < LOW * med || sp[j] > HIGH * med;
            if (irregular && hasRare(seq, a[j] + 1, a[j + 1], layerNames)) {
                runs.add(new int[] {j + 1 - runStart, startBounded ? 1 : 0, 1});
                runStart = j + 1;
                startBounded = true;
            }
        }
        boolean endBounded = hasRare(seq, a[a.length - 1] + 1, seq.length, layerNames);
        runs.add(new int[] {a.length - runStart, startBounded ? 1 : 0, endBounded ? 1 : 0});
        Map<Integer, Integer> bounded = new TreeMap<>();
        int oneSided = 0;
        int any = 0;
        for (int[] r : runs) {
            if (r[1] == 1 && r[2] == 1) {
                bounded.merge(r[0], 1, Integer::sum);
            } else if (r[1] == 1 || r[2] == 1) {
                oneSided = Math.max(oneSided, r[0]);
            }
            any = Math.max(any, r[0]);
        }
        notes.add("anchor runs between pass boundaries: "
                + runs.stream()
                        .map(r -> (r[1] == 1 ? "[" : "(") + r[0] + (r[2] == 1 ? "]" : ")"))
                        .toList());
        if (!bounded.isEmpty()) {
            int bestLen = 0;
            int bestCount = 0;
            for (Map.Entry<Integer, Integer> e : bounded.entrySet()) {
                if (e.getValue() >= bestCount) { // ascending keys: ties go to the longer run
                    bestLen = e.getKey();
                    bestCount = e.getValue();
                }
            }
            return bestLen;
        }
        if (a.length < 3) {
            return 0;
        }
        return oneSided > 0 ? oneSided : any;
    }

    /**
     * Anchors per pass from the marked steps of the window: the most common anchor count of the steps that hold
     * anchors (ties: the larger), the window's last step left out unless the window ends the trace; 0 when no
     * such step is in the window. A step marker bounds a pass exactly, where the rare-kernel runs of {@link
     * #layerAnchors} can only guess (a trace without lm_head or sampling kernels merges its passes).
     */
    private static int markedStepAnchors(long[] steps, int[] anchorPos, boolean atEnd, List<String> notes) {
        long last = Long.MIN_VALUE;
        for (int i = steps.length - 1; i >= 0; i--) {
            if (steps[i] > 0) {
                last = steps[i];
                break;
            }
        }
        if (last == Long.MIN_VALUE) {
            return 0;
        }
        Map<Long, Integer> perStep = new java.util.LinkedHashMap<>();
        for (int pos : anchorPos) {
            long step = steps[pos];
            if (step > 0 && (atEnd || step != last)) {
                perStep.merge(step, 1, Integer::sum);
            }
        }
        if (perStep.isEmpty()) {
            return 0;
        }
        Map<Integer, Integer> byCount = new TreeMap<>();
        perStep.values().forEach(c -> byCount.merge(c, 1, Integer::sum));
        int best = 0;
        int bestSteps = 0;
        for (Map.Entry<Integer, Integer> e : byCount.entrySet()) {
            if (e.getValue() >= bestSteps) { // ascending counts: ties go to the larger
                best = e.getKey();
                bestSteps = e.getValue();
            }
        }
        notes.add("anchors per marked step: " + byCount + " (count: steps)");
        return best;
    }

    private static boolean hasRare(int[] seq, int from, int to, Set<Integer> layerNames) {
        for (int i = Math.max(0, from); i < Math.min(seq.length, to); i++) {
            if (!layerNames.contains(seq[i])) {
                return true;
            }
        }
        return false;
    }
}
