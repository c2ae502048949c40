package io.llmprof.streams.service.export;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.llmprof.events.Anomaly;
import io.llmprof.events.Json;
import io.llmprof.events.RankKey;
import io.llmprof.events.host.Reservoir;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.CoordinatorRecord;
import io.llmprof.events.service.EpBalanceRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.KvCacheRecord;
import io.llmprof.events.service.MoeRecord;
import io.llmprof.events.service.PdRecord;
import io.llmprof.events.service.RequestIds;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestStateRecord;
import io.llmprof.events.service.ServiceEvent;
import io.llmprof.streams.service.ServiceSink;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The writer behind {@code llmprof export}: one {@link ServiceSink} shared by every instance's analyzer. Rows are
 * written as records arrive (one CSV writer per file, batched inserts into profiler.db); only small state is
 * kept: the first time per instance (relative columns), the last free-block count per KV pool, open
 * pd_split_communication rows (bounded), the curve reservoirs, and the EP-balance / MoE summaries, which are
 * written with the charts on {@link #close()}.
 */
public final class ExportSink implements ServiceSink, AutoCloseable {
    /** Bound on requests whose pd_split_communication row is still open; the oldest is written first. */
    static final int MAX_OPEN_PD_ROWS = 65_536;

    private static final int KEPT_ANOMALIES = 20;

    /**
     * The tables msServiceProfiler shows as plain tables in MindStudio Insight, by the view that data_table names
     * (request_data, forward_info, kvcache_usage, pd_split_pull_kvcache, pd_communication_info in its exporters;
     * batch_info in its early utils.py).
     */
    static final Map<String, String> DATA_VIEWS = dataViews();

    private static Map<String, String> dataViews() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("batch", "batch_info");
        m.put("kvcache", "kvcache_usage");
        m.put("pd_split_communication", "pd_communication_info");
        m.put("request", "request_data");
        m.put("pd_split_kvcache", "pd_split_pull_kvcache");
        m.put("forward", "forward_info");
        return m;
    }

    /** Calls sampled per MoE device for moe_analysis's percentiles (exact up to this many calls). */
    static final int MOE_SAMPLE = 4096;

    private final Path dir;
    private final ProfilerDb db;
    private final Map<String, CsvTable> csv = new LinkedHashMap<>();
    private final Map<String, Long> firstForwardNs = new HashMap<>();
    private final Map<String, Long> firstStateNs = new HashMap<>();
    private final Map<String, Long> lastFreeBlocks = new HashMap<>();
    private final LinkedHashMap<String, PdCommRow> pdComm = new LinkedHashMap<>();
    private final LatencyCurve ttftCurve = new LatencyCurve(ExportTable.FIRST_TOKEN_LATENCY);
    private final LatencyCurve e2eCurve = new LatencyCurve(ExportTable.REQ_LATENCY);
    private final LatencyCurve prefillSpeedCurve = new LatencyCurve(ExportTable.PREFILL_GEN_SPEED);
    private final LatencyCurve decodeSpeedCurve = new LatencyCurve(ExportTable.DECODE_GEN_SPEED);
    private final Map<EpKey, EpBalanceRecord> ep = new TreeMap<>();
    private final Map<MoeKey, MoeRecord> moe = new TreeMap<>();
    /** Every MoE call of a device, dispatch and combine together: moe_analysis's per-device distribution. */
    private final Map<DeviceKey, Reservoir> moeCalls = new TreeMap<>();

    private final List<Anomaly> anomalies = new ArrayList<>();
    private long anomalyCount;
    private long finished;
    private long timedOut;
    private final List<Path> charts = new ArrayList<>();
    private final List<String> notices = new ArrayList<>();
    private boolean closed;
    /** The raw event being handled, null between events. */
    private ServiceEvent current;

    private final TraceExport trace;
    private final BatchLinks batchLinks = new BatchLinks(this::insert);

    record EpKey(String instance, int layer, String rank) implements Comparable<EpKey> {
        @Override
        public int compareTo(EpKey o) {
            return Comparator.comparing(EpKey::instance)
                    .thenComparingInt(EpKey::layer)
                    .thenComparing(EpKey::rank, ExportSink::compareRanks)
                    .compare(this, o);
        }
    }

    /** One MoE device: an EP rank of an instance. */
    record DeviceKey(String instance, String rank) implements Comparable<DeviceKey> {
        @Override
        public int compareTo(DeviceKey o) {
            return Comparator.comparing(DeviceKey::instance)
                    .thenComparing(DeviceKey::rank, ExportSink::compareRanks)
                    .compare(this, o);
        }
    }

    record MoeKey(String instance, String op, String rank) implements Comparable<MoeKey> {
        @Override
        public int compareTo(MoeKey o) {
            return Comparator.comparing(MoeKey::instance)
                    .thenComparing(MoeKey::op)
                    .thenComparing(MoeKey::rank, ExportSink::compareRanks)
                    .compare(this, o);
        }
    }

    /** pd_split_communication's row of one request, filled from its Communication events. */
    private static final class PdCommRow {
        final String rid;
        final String instance;
        final Long[] timesNs = new Long[5];
        long events;

        PdCommRow(String rid, String instance) {
            this.rid = rid;
            this.instance = instance;
        }
    }

    /** msServiceProfiler's Communication event names, in pd_split_communication's column order. */
    static final List<String> PD_COMM_EVENTS =
            List.of("receiveReq", "sendReqToD", "sendReqToDSucc", "prefillRes", "decodeRes");

    public ExportSink(Path dir) throws IOException {
        this.dir = dir;
        try {
            this.db = new ProfilerDb(dir);
            for (ExportTable t : TraceExport.TABLES) {
                db.ensure(t); // msServiceProfiler creates its trace tables whatever the data
            }
        } catch (SQLException e) {
            throw new IOException("cannot create " + dir.resolve(ProfilerDb.FILE) + ": " + e.getMessage(), e);
        }
        this.trace = new TraceExport(dir, this::insert);
    }

    // ---------------------------------------------------------------- events

    /**
     * The raw event an analyzer is about to handle: records emitted while it is handled (a KV state, a batch) can
     * read what the record does not carry (its domain, its requests' iterations). {@link #handled()} ends it.
     */
    public void event(String job, String instance, ServiceEvent e) {
        current = e;
        trace.event(RankKey.of(job, instance), e);
    }

    /** The event given to {@link #event} has been handled: records from now on (timeouts, the end) have none. */
    public void handled() {
        current = null;
    }

    // ---------------------------------------------------------------- records

    @Override
    public void request(RequestRecord r) {
        if (RequestRecord.TIMED_OUT.equals(r.status())) {
            timedOut++;
        } else {
            finished++;
        }
        String key = RankKey.of(r.job(), r.instance());
        write(
                ExportTable.REQUEST,
                r.rid(),
                Cells.dateTime(r.arrivalNs()),
                r.inputTokens(),
                r.outputTokens(),
                Cells.ms(r.e2eNs()),
                Cells.ms(r.queueWaitNs()),
                Cells.ms(r.ttftNs()),
                r.cacheHitRate(),
                Cells.ms(r.arrivalNs()),
                Cells.ms(r.endNs()),
                r.status(),
                r.finishReason(),
                Cells.ms(r.tpotNs()),
                r.dpRank(),
                r.enqueues(),
                r.forwardSteps(),
                r.specAcceptedTokens(),
                r.aliases().isEmpty() ? null : String.join(";", r.aliases()),
                key);
        trace.requestEnded(r.rid());
        for (String alias : r.aliases()) {
            trace.requestEnded(alias);
            trace.requestEnded(RequestIds.canonical(alias));
        }
        if (r.ttftNs() != null && r.firstTokenNs() != null) {
            curve(ttftCurve, r.firstTokenNs(), r.ttftNs() / 1e3); // µs, as msServiceProfiler's curve
            if (r.inputTokens() != null && r.ttftNs() > 0) {
                curve(prefillSpeedCurve, r.firstTokenNs(), r.inputTokens() / (r.ttftNs() / 1e9));
            }
        }
        if (r.e2eNs() != null && r.endNs() != null) {
            curve(e2eCurve, r.endNs(), r.e2eNs() / 1e3);
        }
        if (r.tpotNs() != null && r.tpotNs() > 0 && r.endNs() != null) {
            curve(decodeSpeedCurve, r.endNs(), 1e9 / r.tpotNs());
        }
    }

    @Override
    public void batch(BatchRecord r) {
        Long prefillTokens = null;
        Long decodeTokens = null;
        // scheduled tokens come as one sum: split only when the batch is all prefill or all decode
        if (r.scheduledTokens() != null && r.prefillCount() != null && r.decodeCount() != null) {
            if (r.decodeCount() == 0 && r.prefillCount() > 0) {
                prefillTokens = r.scheduledTokens();
                decodeTokens = 0L;
            } else if (r.prefillCount() == 0 && r.decodeCount() > 0) {
                prefillTokens = 0L;
                decodeTokens = r.scheduledTokens();
            }
        }
        long endNs = r.startNs() + r.durNs();
        write(
                ExportTable.BATCH,
                r.name(),
                json(r.rids()),
                Cells.dateTime(r.startNs()),
                Cells.dateTime(endNs),
                Cells.ms(r.durNs()),
                r.batchType(),
                r.pid() == null ? null : r.pid().toString(),
                r.batchSize(),
                r.prefillCount(),
                r.decodeCount(),
                null,
                null,
                r.kvFreeBlocks(),
                null,
                null,
                r.kvUsage(),
                prefillTokens,
                decodeTokens,
                r.scheduledTokens(),
                r.dpRank(),
                Cells.ms(r.startNs()),
                Cells.ms(endNs),
                null,
                null,
                r.kind(),
                RankKey.of(r.job(), r.instance()));
        batchLinks.batch(r, current);
    }

    @Override
    public void forward(ForwardRecord r) {
        String key = RankKey.of(r.job(), r.instance());
        long base = firstForwardNs.computeIfAbsent(key, k -> r.startNs());
        long endNs = r.startNs() + r.durNs();
        write(
                ExportTable.FORWARD,
                r.spec() ? "specDecoding" : "forward",
                Cells.ms(r.startNs() - base),
                Cells.dateTime(r.startNs()),
                Cells.dateTime(endNs),
                Cells.ms(r.durNs()),
                Cells.ms(r.bubbleNs()),
                r.batchSize(),
                r.batchType(),
                r.iteration(),
                r.dpRank(),
                r.pid() == null ? null : r.pid().toString(),
                r.instance(),
                Cells.ms(r.startNs()),
                Cells.ms(endNs),
                key);
    }

    @Override
    public void kvCache(KvCacheRecord r) {
        String key = RankKey.of(r.job(), r.instance());
        String pool = key + '\u0000' + (r.dpRank() == null ? "" : r.dpRank());
        Long before = lastFreeBlocks.get(pool);
        Long after = r.freeBlocks();
        Long allocated = null;
        Long freed = null;
        if (before != null && after != null) {
            allocated = Math.max(0, before - after);
            freed = Math.max(0, after - before);
        }
        if (after != null) {
            lastFreeBlocks.put(pool, after);
        }
        Map<String, Long> blocks = new LinkedHashMap<>();
        blocks.put("Device Block", r.freeBlocks()); // msServiceProfiler's KVCache counter: free blocks
        blocks.put("used_blocks", r.usedBlocks());
        trace.counter(
                key,
                current == null ? null : current.pid(),
                r.dpRank() == null ? "KVCache" : "KVCache-dp" + r.dpRank(),
                r.timeNs(),
                blocks);
        write(
                ExportTable.KVCACHE,
                r.rid(),
                r.name(),
                Cells.dateTime(r.timeNs()),
                r.totalBlocks(),
                r.usedBlocks(),
                r.freeBlocks(),
                allocated,
                freed,
                r.freeBlocks(),
                r.usage(),
                current != null && !current.domain().isEmpty() ? current.domain() : "KVCache",
                Cells.ms(r.timeNs()),
                r.dpRank(),
                r.allocations(),
                r.frees(),
                key);
    }

    @Override
    public void requestStates(RequestStateRecord r) {
        String key = RankKey.of(r.job(), r.instance());
        long base = firstStateNs.computeIfAbsent(key, k -> r.timeNs());
        Map<String, Long> counts = new LinkedHashMap<>();
        counts.put("waiting", r.waiting());
        counts.put("running", r.running());
        counts.put("swapped", r.swapped());
        trace.counter(key, r.pid(), "Request Status", r.timeNs(), counts);
        write(
                ExportTable.REQUEST_STATUS,
                r.instance(),
                r.pid() == null ? null : r.pid().toString(),
                Cells.dateTime(r.timeNs()),
                Cells.ms(r.timeNs() - base),
                r.waiting(),
                r.running(),
                r.swapped(),
                Cells.ms(r.timeNs()),
                json(new TreeMap<>(r.states())),
                key);
    }

    @Override
    public void pd(PdRecord r) {
        String key = RankKey.of(r.job(), r.instance());
        if (PdRecord.KV_PULL.equals(r.kind())) {
            long endNs = r.startNs() + r.durNs();
            write(
                    ExportTable.PD_KVCACHE,
                    "KVCache",
                    r.rank(),
                    r.rid(),
                    label(r, "block_tables", "blockTables"),
                    parseLong(label(r, "seq_len", "batch_seq_len", "seqLen")),
                    Cells.ms(r.durNs()),
                    Cells.dateTimeMillis(r.startNs()),
                    Cells.dateTimeMillis(endNs),
                    Cells.ms(r.startNs()),
                    Cells.ms(endNs),
                    r.name(),
                    r.peer(),
                    r.blocks(),
                    key);
            return;
        }
        if (r.rid() == null) {
            return; // pd_split_communication is per request
        }
        PdCommRow row = pdComm.get(r.rid());
        if (row == null) {
            row = new PdCommRow(r.rid(), key);
            pdComm.put(r.rid(), row);
            if (pdComm.size() > MAX_OPEN_PD_ROWS) {
                Iterator<PdCommRow> oldest = pdComm.values().iterator();
                writePdComm(oldest.next());
                oldest.remove();
            }
        }
        row.events++;
        int column = PD_COMM_EVENTS.indexOf(r.name());
        if (column >= 0 && row.timesNs[column] == null) {
            row.timesNs[column] = r.startNs();
        }
        if (column == PD_COMM_EVENTS.size() - 1) { // decodeRes: the request is done
            writePdComm(pdComm.remove(r.rid()));
        }
    }

    private void writePdComm(PdCommRow row) {
        write(
                ExportTable.PD_COMMUNICATION,
                row.rid,
                Cells.ms(row.timesNs[0]),
                Cells.ms(row.timesNs[1]),
                Cells.ms(row.timesNs[2]),
                Cells.ms(row.timesNs[3]),
                Cells.ms(row.timesNs[4]),
                row.events,
                row.instance);
    }

    @Override
    public void coordinator(CoordinatorRecord r) {
        write(
                ExportTable.COORDINATOR,
                Cells.dateTime(r.timeNs()),
                r.node(),
                r.nodeType(),
                r.added(),
                r.ended(),
                r.running(),
                Cells.ms(r.timeNs()),
                r.name(),
                RankKey.of(r.job(), r.instance()));
    }

    @Override
    public void epBalance(EpBalanceRecord r) {
        EpKey k = new EpKey(RankKey.of(r.job(), r.instance()), r.layer(), r.rank());
        if (r.removesCell()) {
            ep.remove(k); // the analyzer forgot the rank: its layers' other cells come again
        } else {
            ep.put(k, r);
        }
    }

    @Override
    public void moe(MoeRecord r) {
        moe.put(new MoeKey(RankKey.of(r.job(), r.instance()), r.op(), r.rank()), r);
    }

    @Override
    public void moeCall(String job, String instance, String op, String rank, long durNs) {
        moeCalls.computeIfAbsent(new DeviceKey(RankKey.of(job, instance), rank), k -> new Reservoir(MOE_SAMPLE))
                .add(durNs);
    }

    @Override
    public void anomaly(Anomaly a) {
        anomalyCount++;
        if (anomalies.size() < KEPT_ANOMALIES) {
            anomalies.add(a);
        }
    }

    // ---------------------------------------------------------------- end

    /** Writes the open rows, the summaries and the charts, and closes every file. */
    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        try {
            for (PdCommRow row : pdComm.values()) {
                writePdComm(row);
            }
            pdComm.clear();
            for (LatencyCurve c : List.of(ttftCurve, e2eCurve, prefillSpeedCurve, decodeSpeedCurve)) {
                List<Object> last = c.last();
                if (last != null) {
                    insert(c.table(), last);
                }
            }
            writeEpBalance();
            writeMoe();
            trace.close();
            writeDataTables();
            if (batchLinks.unmatchedExecutions() > 0) {
                notices.add(batchLinks.unmatchedExecutions() + " executed batches match no scheduled batch of the"
                        + " same request list: not in batch_exec");
            }
        } finally {
            IOException failure = null;
            try {
                trace.close(); // already closed unless something above failed: the file is still completed
            } catch (IOException e) {
                failure = e;
            }
            for (CsvTable t : csv.values()) {
                try {
                    t.close();
                } catch (IOException e) {
                    failure = e;
                }
            }
            try {
                db.close();
            } catch (SQLException e) {
                failure = new IOException("cannot complete " + db.file() + ": " + e.getMessage(), e);
            }
            if (failure != null) {
                throw failure;
            }
        }
    }

    /** data_table and its views, data_link: how MindStudio Insight finds the plain tables and the rid link. */
    private void writeDataTables() {
        try {
            db.ensure(ExportTable.DATA_TABLE);
            long id = 0;
            for (Map.Entry<String, String> v : DATA_VIEWS.entrySet()) {
                if (!db.has(v.getKey())) {
                    continue;
                }
                db.execute("CREATE VIEW " + ProfilerDb.quoteIdent(v.getValue()) + " AS SELECT * FROM "
                        + ProfilerDb.quoteIdent(v.getKey()));
                insert(ExportTable.DATA_TABLE, Arrays.asList(++id, v.getValue(), v.getValue()));
            }
            if (db.has(ExportTable.REQUEST.name())) {
                insert(ExportTable.DATA_LINK, Arrays.asList("rid", "request", "http_rid"));
            }
        } catch (SQLException e) {
            throw new UncheckedIOException(
                    new IOException("cannot write the views of " + db.file() + ": " + e.getMessage(), e));
        }
    }

    private void writeEpBalance() throws IOException {
        if (ep.isEmpty()) {
            notices.add("no GroupedMatmul (EP balance) data: ep_balance.csv and ep_balance.png not written");
            return;
        }
        boolean oneInstance =
                ep.keySet().stream().map(EpKey::instance).distinct().count() == 1;
        TreeSet<String> columns = new TreeSet<>(ExportSink::compareColumns);
        int layers = 0;
        for (EpKey k : ep.keySet()) {
            columns.add(column(k, oneInstance));
            layers = Math.max(layers, k.layer() + 1);
        }
        List<String> cols = new ArrayList<>(columns);
        String[] specs = new String[cols.size() + 1];
        specs[0] = "decoder_layer INTEGER";
        for (int i = 0; i < cols.size(); i++) {
            specs[i + 1] = cols.get(i) + " REAL";
        }
        ExportTable wide = ExportTable.of("ep_balance", specs);
        Double[][] totalMs = new Double[layers][cols.size()];
        double[][] meanMs = new double[layers][cols.size()];
        for (double[] row : meanMs) {
            Arrays.fill(row, Double.NaN);
        }
        for (Map.Entry<EpKey, EpBalanceRecord> e : ep.entrySet()) {
            int c = cols.indexOf(column(e.getKey(), oneInstance));
            EpBalanceRecord r = e.getValue();
            totalMs[r.layer()][c] = r.totalNs() / 1e6;
            meanMs[r.layer()][c] = r.meanNs() / 1e6;
            write(
                    ExportTable.EP_BALANCE_DETAIL,
                    r.layer(),
                    r.rank(),
                    r.count(),
                    Cells.ms(r.totalNs()),
                    Cells.ms(r.meanNs()),
                    r.ratioToLayerMean(),
                    r.moeLayers(),
                    e.getKey().instance());
        }
        for (int layer = 0; layer < layers; layer++) {
            List<Object> row = new ArrayList<>();
            row.add(layer);
            row.addAll(Arrays.asList(totalMs[layer]));
            write(wide, row);
        }
        Path png = dir.resolve("ep_balance.png");
        ExportCharts.epBalance(png, cols, meanMs);
        charts.add(png);
    }

    private static String column(EpKey k, boolean oneInstance) {
        return oneInstance ? k.rank() : k.instance() + "/" + k.rank();
    }

    private void writeMoe() throws IOException {
        if (moe.isEmpty()) {
            notices.add("no MoeDistributeDispatch/Combine data: moe_analysis.csv and moe_analysis.png not written");
            return;
        }
        boolean oneInstance =
                moe.keySet().stream().map(MoeKey::instance).distinct().count() == 1;
        Map<DeviceKey, Map<String, MoeRecord>> devices = new TreeMap<>();
        List<ExportCharts.MoeBox> boxes = new ArrayList<>();
        for (Map.Entry<MoeKey, MoeRecord> e : moe.entrySet()) {
            MoeRecord r = e.getValue();
            String label = oneInstance ? r.rank() : e.getKey().instance() + "/" + r.rank();
            devices.computeIfAbsent(new DeviceKey(e.getKey().instance(), r.rank()), k -> new TreeMap<>())
                    .put(r.op(), r);
            write(
                    ExportTable.MOE_ANALYSIS_DETAIL,
                    label,
                    r.op(),
                    r.count(),
                    Cells.ms(r.meanNs()),
                    Cells.ms(r.p2_5Ns()),
                    Cells.ms(r.p50Ns()),
                    Cells.ms(r.p97_5Ns()),
                    r.slowestCount(),
                    r.alignedCalls(),
                    r.slowestShare(),
                    e.getKey().instance());
            boxes.add(new ExportCharts.MoeBox(
                    label,
                    r.op(),
                    r.p2_5Ns() / 1e6,
                    r.p50Ns() / 1e6,
                    r.p97_5Ns() / 1e6,
                    r.slowestShare(),
                    r.alignedCalls()));
        }
        for (Map.Entry<DeviceKey, Map<String, MoeRecord>> d : devices.entrySet()) {
            DeviceKey k = d.getKey();
            Map<String, MoeRecord> ops = d.getValue();
            Reservoir calls = moeCalls.get(k);
            long count;
            double meanNs;
            Long lower = null;
            Long median = null;
            Long upper = null;
            if (calls != null && calls.count() > 0) {
                count = calls.count();
                meanNs = calls.mean();
                lower = calls.quantile(25);
                median = calls.quantile(500);
                upper = calls.quantile(975);
            } else {
                // records without the calls behind them (a sink fed records only): the mean is still exact
                count = ops.values().stream().mapToLong(MoeRecord::count).sum();
                meanNs = ops.values().stream()
                                .mapToDouble(r -> r.meanNs() * r.count())
                                .sum()
                        / Math.max(1, count);
            }
            MoeRecord dispatch = ops.get(MoeRecord.DISPATCH);
            MoeRecord combine = ops.get(MoeRecord.COMBINE);
            write(
                    ExportTable.MOE_ANALYSIS,
                    oneInstance ? k.rank() : k.instance() + "/" + k.rank(),
                    Cells.ms(meanNs),
                    Cells.ms(lower),
                    Cells.ms(upper),
                    count,
                    Cells.ms(median),
                    dispatch == null ? null : dispatch.slowestShare(),
                    combine == null ? null : combine.slowestShare(),
                    k.instance());
        }
        Path png = dir.resolve("moe_analysis.png");
        ExportCharts.moe(png, boxes);
        charts.add(png);
    }

    // ---------------------------------------------------------------- plumbing

    private void curve(LatencyCurve c, long timeNs, double value) {
        List<Object> row = c.add(timeNs, value);
        if (row != null) {
            insert(c.table(), row);
        }
    }

    private void write(ExportTable table, Object... cells) {
        write(table, Arrays.asList(cells));
    }

    private void write(ExportTable table, List<?> cells) {
        csv.computeIfAbsent(table.name(), n -> new CsvTable(table, dir)).row(cells);
        insert(table, cells);
    }

    private void insert(ExportTable table, List<?> cells) {
        try {
            db.insert(table, cells);
        } catch (SQLException e) {
            throw new UncheckedIOException(new IOException(
                    "cannot write table " + table.name() + " of " + db.file() + ": " + e.getMessage(), e));
        }
    }

    private static String json(Object value) {
        try {
            return Json.mapper().writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String label(PdRecord r, String... names) {
        for (String n : names) {
            String v = r.labels().get(n);
            if (v != null) {
                return v;
            }
        }
        return null;
    }

    private static Long parseLong(String s) {
        if (s == null) {
            return null;
        }
        try {
            return (long) Double.parseDouble(s.trim());
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** Ranks in numeric order when both are numbers ("2" before "10"), else as text. */
    static int compareRanks(String a, String b) {
        Optional<Long> x = number(a);
        Optional<Long> y = number(b);
        if (x.isPresent() && y.isPresent()) {
            return Long.compare(x.get(), y.get());
        }
        if (x.isPresent() != y.isPresent()) {
            return x.isPresent() ? -1 : 1;
        }
        return a.compareTo(b);
    }

    private static int compareColumns(String a, String b) {
        int sa = a.lastIndexOf('/');
        int sb = b.lastIndexOf('/');
        int byInstance = (sa < 0 ? "" : a.substring(0, sa)).compareTo(sb < 0 ? "" : b.substring(0, sb));
        return byInstance != 0 ? byInstance : compareRanks(a.substring(sa + 1), b.substring(sb + 1));
    }

    private static Optional<Long> number(String s) {
        try {
            return Optional.of(Long.parseLong(s));
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }

    // ---------------------------------------------------------------- summary

    /** CSV files written and their data rows, in first-written order. */
    public Map<String, Long> csvRows() {
        Map<String, Long> m = new LinkedHashMap<>();
        csv.values().forEach(t -> m.put(t.file().getFileName().toString(), t.rows()));
        return m;
    }

    /** profiler.db tables and their rows. */
    public Map<String, Long> dbRows() {
        return db.rows();
    }

    public List<Path> charts() {
        return List.copyOf(charts);
    }

    /** What was not written and why (no EP data, no MoE data). */
    public List<String> notices() {
        return List.copyOf(notices);
    }

    public long finishedRequests() {
        return finished;
    }

    public long timedOutRequests() {
        return timedOut;
    }

    public long anomalyCount() {
        return anomalyCount;
    }

    /** The first anomalies (at most 20). */
    public List<Anomaly> anomalies() {
        return List.copyOf(anomalies);
    }

    public Path dbFile() {
        return db.file();
    }

    public Path traceFile() {
        return trace.file();
    }

    /** Events written to chrome_tracing.json (metadata included). */
    public long traceEvents() {
        return trace.events();
    }
}
