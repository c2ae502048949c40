package io.llmprof.streams.boundary;

import io.llmprof.events.TraceEvent;
import java.util.ArrayList;
import java.util.List;

/**
 * A tiny trace language for state-machine tables. Tokens, separated by spaces:
 *
 * <ul>
 *   <li>{@code NAME} a 10 us kernel on stream 1, starting 1 us after the latest end so far;
 *   <li>{@code NAME/D} the same with duration D us;
 *   <li>{@code NAME/D@T} starts at absolute T us on stream 2 (overlaps);
 *   <li>{@code ~G} the next event starts G us (instead of 1 us) after the latest end;
 *   <li>{@code memcpy} / {@code memset} a 10 us copy / set (not a kernel).
 * </ul>
 * Kernel i of the script is reported as "i" in {@link #describe}.
 */
final class Script {
    private Script() {}

    static List<TraceEvent> parse(String script) {
        List<TraceEvent> out = new ArrayList<>();
        long maxEnd = 0;
        long nextGap = 1_000;
        boolean first = true;
        for (String tok : script.trim().split("\\s+")) {
            if (tok.startsWith("~")) {
                nextGap = (long) (Double.parseDouble(tok.substring(1)) * 1000);
                continue;
            }
            String name = tok;
            long dur = 10_000;
            Long at = null;
            int slash = tok.indexOf('/');
            if (slash >= 0) {
                name = tok.substring(0, slash);
                String rest = tok.substring(slash + 1);
                int atIdx = rest.indexOf('@');
                if (atIdx >= 0) {
                    at = (long) (Double.parseDouble(rest.substring(atIdx + 1)) * 1000);
                    rest = rest.substring(0, atIdx);
                }
                dur = (long) (Double.parseDouble(rest) * 1000);
            }
            long start = at != null ? at : first ? 0 : maxEnd + nextGap;
            TraceEvent.Kind kind = name.equals("memcpy")
                    ? TraceEvent.Kind.MEMCPY
                    : name.equals("memset") ? TraceEvent.Kind.MEMSET : TraceEvent.Kind.KERNEL;
            String full = kind == TraceEvent.Kind.KERNEL ? "void " + name + "<int>(float*, int)" : name;
            out.add(new TraceEvent(kind, full, start, dur, 0, at != null ? 2L : 1L, null, null, null));
            maxEnd = Math.max(maxEnd, start + dur);
            nextGap = 1_000;
            first = false;
        }
        return out;
    }

    /**
     * "#idx complete|incomplete closedBy k=K [a-b] pro=P epi=E L: a-b a-b ..." where a / b are the script
     * indexes of the events whose start / end are the pass's or layer's start / end.
     */
    static String describe(ClosedPass c, List<TraceEvent> events) {
        var p = c.pass();
        StringBuilder b = new StringBuilder()
                .append('#')
                .append(p.index())
                .append(p.complete() ? " complete " : " incomplete ")
                .append(p.closedBy())
                .append(" k=")
                .append(p.kernels())
                .append(" [")
                .append(range(events, p.startNs(), p.endNs()))
                .append("] pro=")
                .append(p.prologue().kernels())
                .append(" epi=")
                .append(p.epilogue().kernels())
                .append(p.steady() ? " steady" : "")
                .append(" L:");
        c.layers().forEach(l -> b.append(' ').append(range(events, l.startNs(), l.endNs())));
        return b.toString();
    }

    private static String range(List<TraceEvent> events, long start, long end) {
        int s = -1;
        int e = -1;
        for (int i = 0; i < events.size(); i++) {
            if (s < 0 && events.get(i).startNs() == start) {
                s = i;
            }
            if (events.get(i).endNs() == end) {
                e = i;
            }
        }
        return s + "-" + e;
    }
}
