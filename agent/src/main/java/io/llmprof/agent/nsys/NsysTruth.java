package io.llmprof.agent.nsys;

import io.llmprof.events.host.HostMetrics;
import io.llmprof.events.host.HostSums;
import java.util.List;
import java.util.Map;

/**
 * What {@link NsysScenarioWriter} wrote, computed from the scenario's arithmetic while generating (never by
 * reading the file back), in the terms of ANALYSIS.md section 3 ({@link HostSums}: every figure clipped to its
 * window). Written as JSON next to the export ({@code <file>.truth.json}).
 *
 * @param format {@value #FORMAT}
 * @param scenario what was generated
 * @param files the exports written
 * @param stepsPerRank step windows per rank
 * @param kernels kernel rows written, all ranks
 * @param rows rows written, all tables and files
 * @param ranks per rank, in rank order
 * @param steps every step window of every rank in generation order (step-major), at most {@link #MAX_STEPS_KEPT}
 * @param stepsComplete false when {@link #steps} was cut at {@link #MAX_STEPS_KEPT} (the JSON file has them all)
 */
public record NsysTruth(
        String format,
        NsysScenario scenario,
        List<String> files,
        long stepsPerRank,
        long kernels,
        long rows,
        List<Rank> ranks,
        List<Step> steps,
        boolean stepsComplete) {
    public static final String FORMAT = "llmprof-nsys-truth/1";
    public static final int MAX_STEPS_KEPT = 100_000;

    /** Keys of {@link Rank#phases()}. */
    public static final String ALL = "all";

    public NsysTruth {
        files = List.copyOf(files);
        ranks = List.copyOf(ranks);
        steps = List.copyOf(steps);
    }

    public Rank rank(int r) {
        return ranks.get(r);
    }

    /** The steps of one rank (index = rank order), from {@link #steps()}. */
    public List<Step> steps(int rank) {
        String name = ranks.get(rank).rank();
        return steps.stream().filter(s -> s.rank().equals(name)).toList();
    }

    /**
     * One rank.
     *
     * @param rank the rank name {@link NsysReader} gives it
     * @param file its export
     * @param pid its process id
     * @param tid the host thread that writes its API calls and NVTX ranges
     * @param device its device id
     * @param phases {@value NsysTruth#ALL}, {@code context}, {@code generation} (phases present only)
     * @param collectives all-reduces it took part in
     * @param collectivesLast of those, the ones it arrived at last (alone)
     */
    public record Rank(
            String rank,
            String file,
            long pid,
            long tid,
            int device,
            Map<String, Phase> phases,
            long collectives,
            long collectivesLast) {
        public Rank {
            phases = Map.copyOf(phases);
        }

        public Phase phase(String name) {
            return phases.get(name);
        }
    }

    /**
     * Sums over a phase's own windows.
     *
     * @param sums the additive figures
     * @param metrics M1..M5 from them
     * @param gaps inter-step gaps before the phase's windows (the first window has none)
     * @param gapNs their total
     */
    public record Phase(HostSums sums, HostMetrics metrics, long gaps, long gapNs) {}

    /**
     * One step window of one rank.
     *
     * @param index the step's ordinal, also the number in its text
     * @param label the NVTX text of the window
     * @param phase {@code context} or {@code generation}
     * @param gapBeforeNs this window's start minus the previous window's end, null for the first
     * @param sums the window's figures
     * @param ranges the scenario's host ranges inside the window, ns by name (the prep range not included)
     * @param gapRanges the scenario's host ranges in the inter-step gap before the window, ns by name
     */
    public record Step(
            String rank,
            long index,
            String label,
            String phase,
            long startNs,
            long endNs,
            Long gapBeforeNs,
            HostSums sums,
            Map<String, Long> ranges,
            Map<String, Long> gapRanges) {
        public Step {
            ranges = ranges == null ? Map.of() : Map.copyOf(ranges);
            gapRanges = gapRanges == null ? Map.of() : Map.copyOf(gapRanges);
        }
    }
}
