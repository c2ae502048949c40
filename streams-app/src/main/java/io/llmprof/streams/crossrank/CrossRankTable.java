package io.llmprof.streams.crossrank;

import io.llmprof.events.CrossRankPass;
import io.llmprof.events.PassRecord;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The cross-rank view offline (`analyze layers` over several traces of one job): every rank's passes folded
 * with {@link CrossRankAggregator}, one small record per (run, aligned index); no events, no layers. Missing
 * ranks are computed at the end, against every rank of the run.
 */
public final class CrossRankTable {
    private final Map<String, TreeMap<Long, CrossRankPass>> byRun = new TreeMap<>();
    private final Map<String, Set<String>> ranksByRun = new TreeMap<>();

    public void add(PassRecord pass) {
        ranksByRun
                .computeIfAbsent(pass.run(), r -> new TreeSet<>(CrossRankPass.RANK_ORDER))
                .add(pass.rank());
        TreeMap<Long, CrossRankPass> passes = byRun.computeIfAbsent(pass.run(), r -> new TreeMap<>());
        long index = CrossRankAggregator.alignIndex(pass);
        passes.put(index, CrossRankAggregator.add(passes.get(index), pass, List.of()));
    }

    /** Every rank that reported a pass, in rank order (all runs). */
    public Set<String> ranks() {
        Set<String> all = new TreeSet<>(CrossRankPass.RANK_ORDER);
        ranksByRun.values().forEach(all::addAll);
        return all;
    }

    /** Every aligned pass, by run then index, with the ranks of its run that did not report it. */
    public List<CrossRankPass> passes() {
        List<CrossRankPass> out = new ArrayList<>();
        byRun.forEach((run, passes) -> {
            Set<String> ranks = ranksByRun.get(run);
            for (CrossRankPass p : passes.values()) {
                out.add(CrossRankAggregator.summarize(p.job(), run, p.index(), p.ranks(), ranks));
            }
        });
        return out;
    }
}
