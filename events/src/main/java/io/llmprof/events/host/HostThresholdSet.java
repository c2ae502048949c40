package io.llmprof.events.host;

import java.util.Map;
import java.util.TreeMap;

/**
 * The configured thresholds: one set for the aggregate (all steps), one per phase. Defaults: {@link
 * HostThresholds#AGGREGATE} for {@code all} and {@code context}, {@link HostThresholds#GENERATION} for {@code
 * generation}. Overrides are {@code key=value} ({@code m1=0.35} sets the aggregate and context value) or
 * {@code phase.key=value} ({@code generation.m1=0.2}).
 */
public record HostThresholdSet(Map<String, HostThresholds> byPhase) {
    public static final String ALL = "all";
    public static final String CONTEXT = "context";
    public static final String GENERATION = "generation";

    public static final HostThresholdSet DEFAULT = new HostThresholdSet(Map.of(
            ALL, HostThresholds.AGGREGATE,
            CONTEXT, HostThresholds.AGGREGATE,
            GENERATION, HostThresholds.GENERATION));

    public HostThresholdSet {
        byPhase = Map.copyOf(byPhase);
    }

    /** The thresholds of {@code phase} ({@code all}, {@code context}, {@code generation}); null means all. */
    public HostThresholds forPhase(String phase) {
        HostThresholds t = byPhase.get(phase == null ? ALL : phase);
        return t != null ? t : byPhase.getOrDefault(ALL, HostThresholds.AGGREGATE);
    }

    /** This set with one override applied, {@code [phase.]key=value}. */
    public HostThresholdSet with(String override) {
        int eq = override.indexOf('=');
        if (eq < 0) {
            throw new IllegalArgumentException("threshold override '" + override + "' is not [phase.]key=value");
        }
        String key = override.substring(0, eq).trim().toLowerCase(java.util.Locale.ROOT);
        double value;
        try {
            value = Double.parseDouble(override.substring(eq + 1).trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("threshold override '" + override + "': value is not a number");
        }
        Map<String, HostThresholds> next = new TreeMap<>(byPhase);
        int dot = key.indexOf('.');
        if (dot < 0) {
            next.put(ALL, forPhase(ALL).with(key, value));
            next.put(CONTEXT, forPhase(CONTEXT).with(key, value));
        } else {
            String phase = key.substring(0, dot);
            if (!phase.equals(ALL) && !phase.equals(CONTEXT) && !phase.equals(GENERATION)) {
                throw new IllegalArgumentException("threshold override '" + override + "': unknown phase '" + phase
                        + "', expected all, context or generation");
            }
            next.put(phase, forPhase(phase).with(key.substring(dot + 1), value));
        }
        return new HostThresholdSet(next);
    }

    /** This set with every override applied in order. */
    public HostThresholdSet with(Iterable<String> overrides) {
        HostThresholdSet s = this;
        for (String o : overrides) {
            s = s.with(o);
        }
        return s;
    }
}
