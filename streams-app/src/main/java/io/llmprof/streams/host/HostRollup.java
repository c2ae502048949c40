package io.llmprof.streams.host;

import io.llmprof.events.host.HostAssessment;
import io.llmprof.events.host.HostDrillDown;
import io.llmprof.events.host.HostStep;
import io.llmprof.events.host.HostSums;
import io.llmprof.events.host.HostThresholdSet;
import io.llmprof.events.host.HostThresholds;
import io.llmprof.events.host.HostVerdict;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Rolling per-phase assessment of one rank. Per phase ({@code all}, and each step's own phase when it has one)
 * it keeps the HostSums of the last {@link HostConfig#rollingSteps()} steps of that phase (0 = the cumulative sum
 * of every step, nothing kept per step) and, after every step, re-assesses the sums with that phase's thresholds.
 * Phase sums are sums over the phase's own windows, never the span between them. Incomplete steps count like
 * the others (their figures are what was observed). Only the {@code all} verdict carries the drill-down.
 */
public final class HostRollup {
    final HostConfig config;
    final Map<String, PhaseSums> phases = new LinkedHashMap<>();
    final Map<String, HostVerdict> latest = new LinkedHashMap<>();

    /** Sums of one phase: the window of recent steps (index, sums), or only the running total when cumulative. */
    static final class PhaseSums {
        final ArrayDeque<Long> indexes = new ArrayDeque<>();
        final ArrayDeque<HostSums> steps = new ArrayDeque<>();
        HostSums sum = HostSums.ZERO;
        long firstIndex;
        long lastIndex;
        boolean any;
    }

    public HostRollup(HostConfig config) {
        this.config = Objects.requireNonNull(config, "config");
    }

    /**
     * Adds one step; returns the verdict for phase {@code all} (with {@code drillDownOrNull}) and, when the step
     * has a phase, for that phase.
     */
    public List<HostVerdict> add(HostStep step, HostDrillDown drillDownOrNull) {
        List<HostVerdict> out = new ArrayList<>(2);
        out.add(add(HostThresholdSet.ALL, step, drillDownOrNull));
        if (step.phase() != null) {
            out.add(add(step.phase(), step, null));
        }
        return out;
    }

    /** The latest verdict per phase. */
    public Map<String, HostVerdict> latest() {
        return Collections.unmodifiableMap(latest);
    }

    private HostVerdict add(String phase, HostStep step, HostDrillDown drillDown) {
        PhaseSums p = phases.computeIfAbsent(phase, k -> new PhaseSums());
        int window = config.rollingSteps();
        p.sum = p.sum.plus(step.sums());
        if (!p.any) {
            p.firstIndex = step.index();
            p.any = true;
        }
        p.lastIndex = step.index();
        if (window > 0) {
            p.indexes.addLast(step.index());
            p.steps.addLast(step.sums());
            while (p.steps.size() > window) {
                p.sum = p.sum.minus(p.steps.removeFirst());
                p.indexes.removeFirst();
            }
            p.firstIndex = p.indexes.peekFirst();
        }
        HostThresholds t = config.thresholds().forPhase(phase);
        HostVerdict v = new HostVerdict(
                step.job(),
                step.run(),
                step.rank(),
                phase,
                p.firstIndex,
                p.lastIndex,
                p.sum,
                t,
                HostAssessment.assess(p.sum, t),
                drillDown);
        latest.put(phase, v);
        return v;
    }
}
