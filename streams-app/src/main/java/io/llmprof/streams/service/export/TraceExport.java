package io.llmprof.streams.service.export;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.llmprof.events.Json;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceAttributes;
import io.llmprof.events.service.ServiceEvent;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;

/**
 * msServiceProfiler's trace view, streamed: {@code chrome_tracing.json} (Chrome JSON object format, {@code
 * {"traceEvents": [...]}}, written with a Jackson generator) and the same events as profiler.db's {@code process},
 * {@code thread}, {@code slice}, {@code counter} and {@code flow} tables (the seed's {@code trace_to_db.py} schema).
 *
 * <ul>
 *   <li>every input event is a slice ({@code ph:"X"}, an instant has {@code dur} 0 so flows bind to it) on the lane
 *       msServiceProfiler gives it: its domain for Request, RequestState and KVCache, else {@code domain(tid)};
 *       {@code cat} is the domain and {@code args} its attributes as msServiceProfiler writes them ({@code rid},
 *       {@code X=}, {@code X+}, labels), so the project's chrome-trace reader reads the same events back;
 *   <li>a request's events are linked by one flow, {@code s} at its first event, {@code t} at each later one,
 *       {@code f} at its last (known when the engine finishes or times the request out, or at the end);
 *   <li>counters ({@code ph:"C"}) from the engine's records: KV blocks and request states.
 * </ul>
 *
 * Memory is bounded: one held flow point per open request (at most {@value #MAX_OPEN_FLOWS}; the least recently
 * active is finished early), and the process and lane tables.
 */
final class TraceExport implements AutoCloseable {
    static final String FILE = "chrome_tracing.json";
    static final int MAX_OPEN_FLOWS = 65_536;
    /** Lanes (pid, lane name); beyond this a process's new lanes fall back to the bare domain. */
    static final int MAX_LANES = 65_536;
    /** Trace pids given to processes without one, or whose pid another instance already uses. */
    static final long SYNTHETIC_PID = 1_000_000_000L;
    /** msServiceProfiler's lane order (exporter_trace.py sort_trace_events_by_tid). */
    static final List<String> LANE_ORDER =
            List.of("KVCache", "Communication", "BatchSchedule", "ModelExecute", "Request", "Api", "Kernel");
    /** Domains whose events share one lane whatever their thread (as msServiceProfiler's trace). */
    static final Set<String> SHARED_LANES = Set.of("Request", "RequestState", "KVCache");
    /** The category of the counters llmprof derives from the engine's records (no domain the engine reads). */
    static final String COUNTER_CAT = "llmprof";

    static final ExportTable PROCESS =
            ExportTable.of("process", "pid TEXT", "process_name TEXT", "label TEXT", "process_sort_index INTEGER");
    static final ExportTable THREAD = ExportTable.of(
            "thread", "track_id INTEGER", "tid TEXT", "pid TEXT", "thread_name TEXT", "thread_sort_index INTEGER");
    static final ExportTable SLICE = ExportTable.of(
            "slice",
            "id INTEGER",
            "timestamp INTEGER",
            "duration INTEGER",
            "name TEXT",
            "depth INTEGER",
            "track_id INTEGER",
            "cat TEXT",
            "args TEXT",
            "cname TEXT",
            "end_time INTEGER",
            "flag_id TEXT");
    static final ExportTable COUNTER = ExportTable.of(
            "counter", "id INTEGER", "name TEXT", "pid TEXT", "timestamp INTEGER", "cat TEXT", "args TEXT");
    static final ExportTable FLOW = ExportTable.of(
            "flow",
            "id INTEGER",
            "flow_id TEXT",
            "name TEXT",
            "cat TEXT",
            "track_id INTEGER",
            "timestamp INTEGER",
            "type TEXT");

    static final List<ExportTable> TABLES = List.of(PROCESS, THREAD, SLICE, COUNTER, FLOW);

    private final Path file;
    private final JsonGenerator json;
    private final BiConsumer<ExportTable, List<?>> db;
    private final int maxOpenFlows;
    /** (instance, pid) to trace pid. */
    private final Map<String, Long> processes = new HashMap<>();

    private final Set<Long> usedPids = new HashSet<>();
    /** (trace pid, lane name) to track id. */
    private final Map<String, Integer> lanes = new HashMap<>();
    /** Open requests' last flow point, least recently active first. */
    private final LinkedHashMap<String, Point> flows = new LinkedHashMap<>();

    private long nextSyntheticPid = SYNTHETIC_PID;
    private long sliceId;
    private long counterId;
    private long flowId;
    private long events;
    private boolean closed;

    /** A flow point not written yet: {@code first} when it is the request's first (written as {@code s}). */
    private record Point(long pid, int track, long tsNs, boolean first) {}

    TraceExport(Path dir, BiConsumer<ExportTable, List<?>> db) throws IOException {
        this(dir, db, MAX_OPEN_FLOWS);
    }

    TraceExport(Path dir, BiConsumer<ExportTable, List<?>> db, int maxOpenFlows) throws IOException {
        this.file = dir.resolve(FILE);
        this.db = db;
        this.maxOpenFlows = maxOpenFlows;
        this.json = Json.mapper()
                .getFactory()
                .createGenerator(new BufferedOutputStream(Files.newOutputStream(file), 1 << 16));
        json.writeStartObject();
        json.writeStringField("displayTimeUnit", "ms");
        json.writeArrayFieldStart("traceEvents");
    }

    /** One input event of instance {@code key}: a slice on its lane and a point of each of its requests' flows. */
    void event(String key, ServiceEvent e) {
        if ("Meta".equalsIgnoreCase(e.domain())) {
            return; // msServiceProfiler's trace hides the Meta domain (dp rank ids, host names)
        }
        long pid = pid(key, e.pid());
        String lane = laneOf(e);
        int track = track(pid, lane);
        long dur = e.durNs() == null ? 0 : e.durNs();
        // serialized once: the same text goes to the file and to slice.args
        String args = ServiceAttributes.put(e, Json.mapper().createObjectNode()).toString();
        String cat = e.domain().isEmpty() ? null : e.domain();
        try {
            json.writeStartObject();
            json.writeStringField("name", e.name());
            json.writeStringField("ph", "X");
            micros("ts", e.startNs());
            micros("dur", dur);
            json.writeNumberField("pid", pid);
            json.writeNumberField("tid", track);
            if (cat != null) {
                json.writeStringField("cat", cat);
            }
            json.writeFieldName("args");
            json.writeRawValue(args);
            json.writeEndObject();
        } catch (IOException x) {
            throw failure(x);
        }
        events++;
        db.accept(
                SLICE,
                cells(++sliceId, e.startNs(), dur, e.name(), null, track, cat, args, null, e.startNs() + dur, null));
        Set<String> seen = new HashSet<>();
        for (RequestRef r : e.requests()) {
            if (seen.add(r.rid())) {
                point(r.rid(), new Point(pid, track, e.startNs(), false));
            }
        }
    }

    private void point(String rid, Point p) {
        Point held = flows.remove(rid);
        if (held != null) {
            flow(rid, held, held.first() ? "s" : "t");
        }
        flows.put(rid, held == null ? new Point(p.pid(), p.track(), p.tsNs(), true) : p);
        if (flows.size() > maxOpenFlows) {
            Iterator<Map.Entry<String, Point>> oldest = flows.entrySet().iterator();
            Map.Entry<String, Point> o = oldest.next();
            oldest.remove();
            finish(o.getKey(), o.getValue());
        }
    }

    /** The engine finished (or timed out) request {@code rid}: its last point ends its flow. */
    void requestEnded(String rid) {
        Point held = flows.remove(rid);
        if (held != null) {
            finish(rid, held);
        }
    }

    private void finish(String rid, Point held) {
        if (!held.first()) { // a request seen at one event only has no flow to draw
            flow(rid, held, "f");
        }
    }

    private void flow(String rid, Point p, String ph) {
        String name = "flow_" + rid;
        try {
            json.writeStartObject();
            json.writeStringField("name", name);
            json.writeStringField("ph", ph);
            micros("ts", p.tsNs());
            json.writeNumberField("pid", p.pid());
            json.writeNumberField("tid", p.track());
            json.writeStringField("id", rid);
            json.writeStringField("cat", rid);
            if ("f".equals(ph)) {
                json.writeStringField("bp", "e"); // binds to the enclosing slice: the request's last event
            }
            json.writeEndObject();
        } catch (IOException x) {
            throw failure(x);
        }
        events++;
        db.accept(FLOW, cells(++flowId, rid, name, rid, p.track(), p.tsNs(), ph));
    }

    /**
     * A counter sample of instance {@code key} (pid {@code pid} when known): {@code values} by series name, null
     * values left out; nothing is written when none is known.
     */
    void counter(String key, Long pidOrNull, String name, long timeNs, Map<String, ? extends Number> values) {
        Map<String, Number> known = new LinkedHashMap<>();
        values.forEach((k, v) -> {
            if (v != null) {
                known.put(k, v);
            }
        });
        if (known.isEmpty()) {
            return;
        }
        long pid = pid(key, pidOrNull);
        ObjectNode args = Json.mapper().createObjectNode();
        known.forEach((k, v) -> {
            if (v instanceof Double d) {
                args.put(k, d);
            } else {
                args.put(k, v.longValue());
            }
        });
        try {
            json.writeStartObject();
            json.writeStringField("name", name);
            json.writeStringField("ph", "C");
            micros("ts", timeNs);
            json.writeNumberField("pid", pid);
            json.writeStringField("cat", COUNTER_CAT);
            json.writeFieldName("args");
            json.writeTree(args);
            json.writeEndObject();
        } catch (IOException x) {
            throw failure(x);
        }
        events++;
        db.accept(COUNTER, cells(++counterId, name, String.valueOf(pid), timeNs, COUNTER_CAT, args.toString()));
    }

    /** msServiceProfiler's lane of an event. */
    static String laneOf(ServiceEvent e) {
        String domain = e.domain().isEmpty() ? e.name() : e.domain();
        if ("PDSplit".equals(domain)) {
            domain = "PDCommunication";
        }
        if (SHARED_LANES.contains(domain) || e.tid() == null || e.tid().isEmpty()) {
            return domain;
        }
        return domain + "(" + e.tid() + ")";
    }

    private long pid(String key, Long pid) {
        String k = key + '\u0000' + (pid == null ? "" : pid.toString());
        Long known = processes.get(k);
        if (known != null) {
            return known;
        }
        long tracePid;
        if (pid != null && pid >= 0 && pid < SYNTHETIC_PID && !usedPids.contains(pid)) {
            tracePid = pid;
        } else {
            do {
                tracePid = nextSyntheticPid++;
            } while (usedPids.contains(tracePid));
        }
        usedPids.add(tracePid);
        processes.put(k, tracePid);
        int index = processes.size() - 1;
        String processName = pid == null ? key : pid.toString();
        try {
            metadata("process_name", tracePid, null, "name", processName);
            metadata("process_labels", tracePid, null, "labels", key);
            metadata("process_sort_index", tracePid, null, "sort_index", index);
        } catch (IOException x) {
            throw failure(x);
        }
        db.accept(PROCESS, cells(String.valueOf(tracePid), processName, key, index));
        return tracePid;
    }

    private int track(long pid, String lane) {
        String k = pid + "\u0000" + lane;
        Integer known = lanes.get(k);
        if (known != null) {
            return known;
        }
        if (lanes.size() >= MAX_LANES) {
            int paren = lane.indexOf('(');
            if (paren > 0) {
                return track(pid, lane.substring(0, paren));
            }
        }
        int track = lanes.size() + 1;
        lanes.put(k, track);
        int order = LANE_ORDER.indexOf(lane.indexOf('(') > 0 ? lane.substring(0, lane.indexOf('(')) : lane);
        Integer sortIndex = order >= 0 ? order : null;
        try {
            metadata("thread_name", pid, track, "name", lane);
            if (sortIndex != null) {
                metadata("thread_sort_index", pid, track, "sort_index", sortIndex);
            }
        } catch (IOException x) {
            throw failure(x);
        }
        db.accept(THREAD, cells(track, lane, String.valueOf(pid), lane, sortIndex));
        return track;
    }

    private void metadata(String name, long pid, Integer tid, String arg, Object value) throws IOException {
        json.writeStartObject();
        json.writeStringField("name", name);
        json.writeStringField("ph", "M");
        json.writeNumberField("pid", pid);
        if (tid != null) {
            json.writeNumberField("tid", tid);
        }
        json.writeObjectFieldStart("args");
        if (value instanceof Integer i) {
            json.writeNumberField(arg, i);
        } else {
            json.writeStringField(arg, String.valueOf(value));
        }
        json.writeEndObject();
        json.writeEndObject();
        events++;
    }

    /** ns as Chrome's µs, exact (a plain decimal with up to 3 fraction digits). */
    private void micros(String field, long ns) throws IOException {
        json.writeFieldName(field);
        json.writeNumber(BigDecimal.valueOf(ns, 3).stripTrailingZeros().toPlainString());
    }

    private static List<Object> cells(Object... values) {
        List<Object> l = new ArrayList<>(values.length);
        for (Object v : values) {
            l.add(v);
        }
        return l;
    }

    private UncheckedIOException failure(IOException x) {
        return new UncheckedIOException("cannot write " + file + ": " + x.getMessage(), x);
    }

    /** Trace events written so far (metadata included). */
    long events() {
        return events;
    }

    Path file() {
        return file;
    }

    /** Ends every open flow at its last point and completes the file. */
    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        try {
            for (Map.Entry<String, Point> f : flows.entrySet()) {
                finish(f.getKey(), f.getValue());
            }
            flows.clear();
            json.writeEndArray();
            json.writeObjectFieldStart("otherData");
            json.writeStringField("generator", "llmprof export");
            json.writeEndObject();
            json.writeEndObject();
        } finally {
            json.close();
        }
    }
}
