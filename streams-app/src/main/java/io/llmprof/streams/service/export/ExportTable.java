package io.llmprof.streams.service.export;

import java.util.ArrayList;
import java.util.List;

/**
 * One output table: its name (the CSV file stem and the profiler.db table) and its columns with their SQLite
 * types. msServiceProfiler's columns come first, in its order; llmprof's extra columns follow.
 */
record ExportTable(String name, List<String> columns, List<String> sqlTypes) {
    ExportTable {
        columns = List.copyOf(columns);
        sqlTypes = List.copyOf(sqlTypes);
    }

    /** {@code of("request", "http_rid TEXT", "execution_time(ms) REAL", ...)}. */
    static ExportTable of(String name, String... specs) {
        List<String> cols = new ArrayList<>();
        List<String> types = new ArrayList<>();
        for (String s : specs) {
            int space = s.lastIndexOf(' ');
            cols.add(s.substring(0, space));
            types.add(s.substring(space + 1));
        }
        return new ExportTable(name, cols, types);
    }

    String csvName() {
        return name + ".csv";
    }

    static final ExportTable REQUEST = of(
            "request",
            "http_rid TEXT",
            "start_datetime TEXT",
            "recv_token_size INTEGER",
            "reply_token_size INTEGER",
            "execution_time(ms) REAL",
            "queue_wait_time(ms) REAL",
            "first_token_latency(ms) REAL",
            "cache_hit_rate REAL",
            "start_time(ms) REAL",
            // llmprof's
            "end_time(ms) REAL",
            "status TEXT",
            "finish_reason TEXT",
            "tpot(ms) REAL",
            "dp_rank TEXT",
            "enqueue_count INTEGER",
            "forward_steps INTEGER",
            "spec_accepted_tokens INTEGER",
            "aliases TEXT",
            "instance TEXT");

    static final ExportTable BATCH = of(
            "batch",
            "name TEXT",
            "res_list TEXT",
            "start_datetime TEXT",
            "end_datetime TEXT",
            "during_time(ms) REAL",
            "batch_type TEXT",
            "prof_id TEXT",
            "batch_size INTEGER",
            "prefill_batch_size INTEGER",
            "decode_batch_size INTEGER",
            "total_blocks INTEGER",
            "used_blocks INTEGER",
            "free_blocks INTEGER",
            "blocks_allocated INTEGER",
            "blocks_freed INTEGER",
            "kvcache_usage_rate REAL",
            "prefill_scheduled_tokens INTEGER",
            "decode_scheduled_tokens INTEGER",
            "total_scheduled_tokens INTEGER",
            "dp_rank TEXT",
            "start_time(ms) REAL",
            "end_time(ms) REAL",
            "accepted_ratio REAL",
            "accepted_ratio_per_pos TEXT",
            // llmprof's
            "kind TEXT",
            "instance TEXT");

    static final ExportTable FORWARD = of(
            "forward",
            "name TEXT",
            "relative_start_time(ms) REAL",
            "start_datetime TEXT",
            "end_datetime TEXT",
            "during_time(ms) REAL",
            "bubble_time(ms) REAL",
            "batch_size INTEGER",
            "batch_type TEXT",
            "forward_iter INTEGER",
            "dp_rank TEXT",
            "prof_id TEXT",
            "hostname TEXT",
            "start_time(ms) REAL",
            "end_time(ms) REAL",
            // llmprof's
            "instance TEXT");

    static final ExportTable KVCACHE = of(
            "kvcache",
            "rid TEXT",
            "name TEXT",
            "start_time TEXT",
            "total_blocks INTEGER",
            "used_blocks INTEGER",
            "free_blocks INTEGER",
            "blocks_allocated INTEGER",
            "blocks_freed INTEGER",
            "device_kvcache_left INTEGER",
            "kvcache_usage_rate REAL",
            // msServiceProfiler's exporter_kvcache.py writes these two, its docs do not list them
            "domain TEXT",
            "timestamp(ms) REAL",
            // llmprof's
            "dp_rank TEXT",
            "allocations INTEGER",
            "frees INTEGER",
            "instance TEXT");

    static final ExportTable REQUEST_STATUS = of(
            "request_status",
            "hostuid TEXT",
            "pid TEXT",
            "start_datetime TEXT",
            "relative_timestamp(ms) REAL",
            "waiting INTEGER",
            "running INTEGER",
            "swapped INTEGER",
            "timestamp(ms) REAL",
            // llmprof's
            "states TEXT",
            "instance TEXT");

    static final ExportTable PD_KVCACHE = of(
            "pd_split_kvcache",
            "domain TEXT",
            "rank TEXT",
            "rid TEXT",
            "block_tables TEXT",
            "seq_len INTEGER",
            "during_time(ms) REAL",
            "start_datetime(ms) TEXT",
            "end_datetime(ms) TEXT",
            "start_time(ms) REAL",
            "end_time(ms) REAL",
            // llmprof's
            "name TEXT",
            "peer TEXT",
            "blocks INTEGER",
            "instance TEXT");

    static final ExportTable PD_COMMUNICATION = of(
            "pd_split_communication",
            "rid TEXT",
            "http_req_time(ms) REAL",
            "send_request_time(ms) REAL",
            "send_request_succ_time(ms) REAL",
            "prefill_res_time(ms) REAL",
            "request_end_time(ms) REAL",
            // llmprof's
            "events INTEGER",
            "instance TEXT");

    static final ExportTable COORDINATOR = of(
            "coordinator",
            "time TEXT",
            "address TEXT",
            "node_type TEXT",
            "add_count INTEGER",
            "end_count INTEGER",
            "running_count INTEGER",
            // llmprof's
            "timestamp(ms) REAL",
            "name TEXT",
            "instance TEXT");

    /** One row per device (EP rank), dispatch and combine calls together, as msServiceProfiler's. */
    static final ExportTable MOE_ANALYSIS = of(
            "moe_analysis",
            "Dataset TEXT",
            "Mean REAL",
            "CI Lower REAL",
            "CI Upper REAL",
            // llmprof's
            "count INTEGER",
            "median REAL",
            "dispatch_slowest_share REAL",
            "combine_slowest_share REAL",
            "instance TEXT");

    /** llmprof's: one row per (device, op), with how often the device was the slowest. */
    static final ExportTable MOE_ANALYSIS_DETAIL = of(
            "moe_analysis_detail",
            "Dataset TEXT",
            "op TEXT",
            "count INTEGER",
            "mean(ms) REAL",
            "p2.5(ms) REAL",
            "median(ms) REAL",
            "p97.5(ms) REAL",
            "slowest_count INTEGER",
            "aligned_calls INTEGER",
            "slowest_share REAL",
            "instance TEXT");

    static final ExportTable EP_BALANCE_DETAIL = of(
            "ep_balance_detail",
            "decoder_layer INTEGER",
            "rank TEXT",
            "count INTEGER",
            "total_time(ms) REAL",
            "mean_time(ms) REAL",
            "ratio_to_layer_mean REAL",
            "moe_layers INTEGER",
            "instance TEXT");

    /**
     * profiler.db only: one row per (scheduled batch, request), as msServiceProfiler's exporter_batch.py; batch_id
     * counts the scheduled batches of the export from 1.
     */
    static final ExportTable BATCH_REQ =
            of("batch_req", "batch_id INTEGER", "req_id TEXT", "rid TEXT", "iter INTEGER", "block INTEGER");

    /**
     * profiler.db only: a scheduled batch and the executions of the same request list (msServiceProfiler's
     * plugin_batch.py), start and end in epoch µs as there.
     */
    static final ExportTable BATCH_EXEC =
            of("batch_exec", "batch_id INTEGER", "name TEXT", "pid TEXT", "start REAL", "end REAL");

    /** profiler.db only: the views MindStudio Insight shows as tables (name = view_name, as msServiceProfiler). */
    static final ExportTable DATA_TABLE = of("data_table", "id INTEGER", "name TEXT", "view_name TEXT");

    /** profiler.db only: a forward trace's rid opens its request row (msServiceProfiler's exporter_forward.py). */
    static final ExportTable DATA_LINK = of("data_link", "source_name TEXT", "target_table TEXT", "target_name TEXT");

    /** The profiler.db latency / speed curves (no CSV, as in msServiceProfiler). */
    static ExportTable curve(String name) {
        return of(name, "timestamp TEXT", "avg REAL", "p99 REAL", "p90 REAL", "p50 REAL", "count INTEGER");
    }

    static final ExportTable FIRST_TOKEN_LATENCY = curve("first_token_latency");
    static final ExportTable REQ_LATENCY = curve("req_latency");
    static final ExportTable PREFILL_GEN_SPEED = curve("prefill_gen_speed");
    static final ExportTable DECODE_GEN_SPEED = curve("decode_gen_speed");
}
