package io.llmprof.streams.offline;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.ReadSummary;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the offline commands read, file by file, and the exit code it makes (docs/analysis.md "Exit codes"):
 * {@value #COMPLETE} every input read to its end with usable data; {@value #PARTIAL} some input read only in part
 * (truncated, invalid from some point on, or bad events skipped) but usable data; {@value #NO_DATA} no usable data at all (empty,
 * garbage, not a trace, nothing the command analyses). 1 is an unexpected failure, 2 a usage error.
 */
public final class InputReport {
    public static final int COMPLETE = 0;
    public static final int PARTIAL = InputProblem.PARTIAL_EXIT;
    public static final int NO_DATA = 4;

    /** Problems listed per file (all are counted). */
    static final int LISTED = 20;

    private final List<Map<String, Object>> files = new ArrayList<>();
    private boolean complete = true;

    /** The report of one file. */
    static InputReport of(Path file, ReadSummary s) {
        InputReport r = new InputReport();
        r.add(file, s);
        return r;
    }

    /** One file's outcome. */
    void add(Path file, ReadSummary s) {
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("file", file.toString());
        f.put("complete", s.complete());
        f.put("events", s.eventsRead());
        f.put("kernels", s.kernels());
        f.put("problems_total", s.problemsTotal());
        List<Map<String, Object>> problems = new ArrayList<>();
        for (InputProblem p : s.problems()) {
            if (problems.size() == LISTED) {
                break;
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("kind", p.kind().tag());
            m.put("position", p.position());
            m.put("message", p.message());
            problems.add(m);
        }
        f.put("problems", problems);
        files.add(f);
        boolean lost = s.problems().stream().anyMatch(p -> p.kind().severity() == io.llmprof.events.Severity.DATA_LOSS);
        f.put("events_lost", lost);
        complete &= s.complete() && !lost;
    }

    /** Whether every file was read to its end and no event of it was lost (skipped as bad input). */
    boolean complete() {
        return complete;
    }

    /** The JSON {@code input} block: {@code {"complete", "files": [{"file", "complete", ..., "problems"}]}}. */
    Map<String, Object> json() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("complete", complete);
        m.put("files", files);
        return m;
    }

    /** The text header line. */
    String headerLine() {
        if (complete) {
            return "input: complete";
        }
        List<String> broken = new ArrayList<>();
        for (Map<String, Object> f : files) {
            if (!(Boolean) f.get("complete") || (Boolean) f.get("events_lost")) {
                @SuppressWarnings("unchecked")
                List<Map<String, Object>> ps = (List<Map<String, Object>>) f.get("problems");
                broken.add(f.get("file") + (ps.isEmpty() ? "" : " (" + ps.get(0).get("message") + ")"));
            }
        }
        return "input: INCOMPLETE, read only in part: " + String.join("; ", broken);
    }

    /** The exit code, given whether the command found anything to analyse. */
    int exitCode(boolean usableData) {
        if (!usableData) {
            return NO_DATA;
        }
        return complete ? COMPLETE : PARTIAL;
    }

    /**
     * For the one-trace commands ({@code analyze kernels|perfetto}): null when the trace can be analysed (complete
     * or not), else the exit code after a one-line message on {@code err}: 2 for an Nsight file, 4 for no usable
     * data.
     */
    static Integer refuse(String command, Path trace, ReadSummary s, java.io.PrintWriter err) {
        if (s.kernels() == 0) {
            String first =
                    s.problems().isEmpty() ? "" : " (" + s.problems().get(0).message() + ")";
            err.println(command + ": " + trace + " has no GPU kernels: nothing to analyse" + first);
            return NO_DATA;
        }
        return null;
    }

    /** An Nsight file given to a command that reads Kineto traces: the message, else null. */
    static String nsightFile(String command, Path trace) {
        String name = trace.getFileName().toString().toLowerCase(java.util.Locale.ROOT);
        if (name.endsWith(".sqlite") || name.endsWith(".nsys-rep") || name.endsWith(".qdrep")) {
            return command + ": " + trace + " is an Nsight Systems file; " + command + " reads PyTorch profiler"
                    + " (Kineto) traces (.json, .json.gz): use analyze host for Nsight SQLite exports";
        }
        return null;
    }

    /** The exit code of a one-trace command that produced its report: 0, or 3 after a one-line message. */
    static int afterReport(String command, Path trace, ReadSummary s, java.io.PrintWriter err) {
        InputReport r = of(trace, s);
        if (r.complete()) {
            return COMPLETE;
        }
        err.println(
                command + ": " + r.headerLine().substring("input: ".length()) + "; the report covers what was read");
        return PARTIAL;
    }
}
