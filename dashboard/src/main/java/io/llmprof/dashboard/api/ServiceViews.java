package io.llmprof.dashboard.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.llmprof.dashboard.store.ServiceStore;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.CoordinatorRecord;
import io.llmprof.events.service.EpBalanceRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.KvCacheRecord;
import io.llmprof.events.service.MoeRecord;
import io.llmprof.events.service.PdRecord;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestStateRecord;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * JSON of the service endpoints: snake_case, times in ns with an {@code _ms} twin for durations, a figure the events
 * did not give is null (shown, not left out).
 */
final class ServiceViews {
    private ServiceViews() {}

    static Double ms(Long ns) {
        return ns == null ? null : ns / 1e6;
    }

    static Double ms(Double ns) {
        return ns == null ? null : ns / 1e6;
    }

    /** One request ({@link RequestRecord}). */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    record RequestView(
            @JsonProperty("job") String job,
            @JsonProperty("instance") String instance,
            @JsonProperty("rid") String rid,
            @JsonProperty("aliases") List<String> aliases,
            @JsonProperty("status") String status,
            @JsonProperty("finish_reason") String finishReason,
            @JsonProperty("dp_rank") String dpRank,
            @JsonProperty("arrival_ns") long arrivalNs,
            @JsonProperty("first_token_ns") Long firstTokenNs,
            @JsonProperty("end_ns") Long endNs,
            @JsonProperty("ttft_ns") Long ttftNs,
            @JsonProperty("ttft_ms") Double ttftMs,
            @JsonProperty("tpot_ns") Double tpotNs,
            @JsonProperty("tpot_ms") Double tpotMs,
            @JsonProperty("e2e_ns") Long e2eNs,
            @JsonProperty("e2e_ms") Double e2eMs,
            @JsonProperty("queue_wait_ns") long queueWaitNs,
            @JsonProperty("queue_wait_ms") double queueWaitMs,
            @JsonProperty("enqueues") int enqueues,
            @JsonProperty("requeued") boolean requeued,
            @JsonProperty("input_tokens") Long inputTokens,
            @JsonProperty("output_tokens") Long outputTokens,
            @JsonProperty("forward_steps") long forwardSteps,
            @JsonProperty("spec_accepted_tokens") Long specAcceptedTokens,
            @JsonProperty("cache_hit_rate") Double cacheHitRate,
            @JsonProperty("last_event_ns") long lastEventNs) {
        static RequestView of(RequestRecord r) {
            return new RequestView(
                    r.job(),
                    r.instance(),
                    r.rid(),
                    r.aliases(),
                    r.status(),
                    r.finishReason(),
                    r.dpRank(),
                    r.arrivalNs(),
                    r.firstTokenNs(),
                    r.endNs(),
                    r.ttftNs(),
                    ms(r.ttftNs()),
                    r.tpotNs(),
                    ms(r.tpotNs()),
                    r.e2eNs(),
                    ms(r.e2eNs()),
                    r.queueWaitNs(),
                    r.queueWaitNs() / 1e6,
                    r.enqueues(),
                    r.enqueues() > 1,
                    r.inputTokens(),
                    r.outputTokens(),
                    r.forwardSteps(),
                    r.specAcceptedTokens(),
                    r.cacheHitRate(),
                    r.lastEventNs());
        }
    }

    /**
     * {@code GET /api/requests}: {@code requests_seen} counts every request received for the covered instances,
     * {@code requests_held} those still in the rings; {@code by} is set for {@code ?slowest=}.
     */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    record RequestsResponse(
            @JsonProperty("requests_seen") long requestsSeen,
            @JsonProperty("requests_held") long requestsHeld,
            @JsonProperty("by") String by,
            @JsonProperty("count") int count,
            @JsonProperty("requests") List<RequestView> requests) {
        static RequestsResponse of(ServiceStore.Requests r, String by) {
            return new RequestsResponse(
                    r.seen(),
                    r.held(),
                    by,
                    r.requests().size(),
                    r.requests().stream().map(RequestView::of).toList());
        }
    }

    @JsonInclude(JsonInclude.Include.ALWAYS)
    record BatchView(
            @JsonProperty("job") String job,
            @JsonProperty("instance") String instance,
            @JsonProperty("name") String name,
            @JsonProperty("kind") String kind,
            @JsonProperty("pid") Long pid,
            @JsonProperty("dp_rank") String dpRank,
            @JsonProperty("start_ns") long startNs,
            @JsonProperty("dur_ns") long durNs,
            @JsonProperty("dur_ms") double durMs,
            @JsonProperty("batch_type") String batchType,
            @JsonProperty("batch_size") int batchSize,
            @JsonProperty("prefill_count") Integer prefillCount,
            @JsonProperty("decode_count") Integer decodeCount,
            @JsonProperty("scheduled_tokens") Long scheduledTokens,
            @JsonProperty("kv_free_blocks") Long kvFreeBlocks,
            @JsonProperty("kv_usage") Double kvUsage,
            @JsonProperty("rids") List<String> rids) {
        static BatchView of(BatchRecord b) {
            return new BatchView(
                    b.job(),
                    b.instance(),
                    b.name(),
                    b.kind(),
                    b.pid(),
                    b.dpRank(),
                    b.startNs(),
                    b.durNs(),
                    b.durNs() / 1e6,
                    b.batchType(),
                    b.batchSize(),
                    b.prefillCount(),
                    b.decodeCount(),
                    b.scheduledTokens(),
                    b.kvFreeBlocks(),
                    b.kvUsage(),
                    b.rids());
        }
    }

    @JsonInclude(JsonInclude.Include.ALWAYS)
    record ForwardView(
            @JsonProperty("job") String job,
            @JsonProperty("instance") String instance,
            @JsonProperty("pid") Long pid,
            @JsonProperty("dp_rank") String dpRank,
            @JsonProperty("iteration") long iteration,
            @JsonProperty("start_ns") long startNs,
            @JsonProperty("dur_ns") long durNs,
            @JsonProperty("dur_ms") double durMs,
            @JsonProperty("bubble_ns") Long bubbleNs,
            @JsonProperty("bubble_ms") Double bubbleMs,
            @JsonProperty("overlap") boolean overlap,
            @JsonProperty("batch_type") String batchType,
            @JsonProperty("batch_size") int batchSize,
            @JsonProperty("spec") boolean spec) {
        static ForwardView of(ForwardRecord f) {
            return new ForwardView(
                    f.job(),
                    f.instance(),
                    f.pid(),
                    f.dpRank(),
                    f.iteration(),
                    f.startNs(),
                    f.durNs(),
                    f.durNs() / 1e6,
                    f.bubbleNs(),
                    ms(f.bubbleNs()),
                    f.bubbleNs() != null && f.bubbleNs() < 0,
                    f.batchType(),
                    f.batchSize(),
                    f.spec());
        }
    }

    @JsonInclude(JsonInclude.Include.ALWAYS)
    record KvView(
            @JsonProperty("dp_rank") String dpRank,
            @JsonProperty("time_ns") long timeNs,
            @JsonProperty("name") String name,
            @JsonProperty("rid") String rid,
            @JsonProperty("total_blocks") Long totalBlocks,
            @JsonProperty("used_blocks") Long usedBlocks,
            @JsonProperty("free_blocks") Long freeBlocks,
            @JsonProperty("usage") Double usage,
            @JsonProperty("allocations") long allocations,
            @JsonProperty("frees") long frees) {
        static KvView of(KvCacheRecord k) {
            return new KvView(
                    k.dpRank(),
                    k.timeNs(),
                    k.name(),
                    k.rid(),
                    k.totalBlocks(),
                    k.usedBlocks(),
                    k.freeBlocks(),
                    k.usage(),
                    k.allocations(),
                    k.frees());
        }
    }

    /** One instance's KV cache: usage now (over its dp ranks), the latest state per dp rank, the recent series. */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    record InstanceKvView(
            @JsonProperty("job") String job,
            @JsonProperty("instance") String instance,
            @JsonProperty("usage") Double usage,
            @JsonProperty("latest") List<KvView> latest,
            @JsonProperty("series") List<KvView> series) {
        static InstanceKvView of(ServiceStore.InstanceKv i) {
            return new InstanceKvView(
                    i.job(),
                    i.instance(),
                    ServiceStore.usage(i.latest()).orElse(null),
                    i.latest().stream().map(KvView::of).toList(),
                    i.series().stream().map(KvView::of).toList());
        }
    }

    record InstancesResponse<T>(@JsonProperty("instances") List<T> instances) {}

    /** {@code GET /api/batches}, newest first. */
    record BatchesResponse(@JsonProperty("count") int count, @JsonProperty("batches") List<BatchView> batches) {}

    /** {@code GET /api/forwards}, newest first; {@code overlaps} counts the listed forwards with a negative bubble. */
    record ForwardsResponse(
            @JsonProperty("count") int count,
            @JsonProperty("overlaps") long overlaps,
            @JsonProperty("forwards") List<ForwardView> forwards) {}

    /** {@code GET /api/pd}, newest first. */
    record PdResponse(@JsonProperty("count") int count, @JsonProperty("transfers") List<PdView> transfers) {}

    @JsonInclude(JsonInclude.Include.ALWAYS)
    record StateView(
            @JsonProperty("time_ns") long timeNs,
            @JsonProperty("waiting") long waiting,
            @JsonProperty("running") long running,
            @JsonProperty("swapped") long swapped,
            @JsonProperty("states") Map<String, Long> states) {
        static StateView of(RequestStateRecord s) {
            return new StateView(s.timeNs(), s.waiting(), s.running(), s.swapped(), s.states());
        }
    }

    @JsonInclude(JsonInclude.Include.ALWAYS)
    record InstanceStatesView(
            @JsonProperty("job") String job,
            @JsonProperty("instance") String instance,
            @JsonProperty("latest") StateView latest,
            @JsonProperty("series") List<StateView> series) {
        static InstanceStatesView of(ServiceStore.InstanceStates s) {
            return new InstanceStatesView(
                    s.job(),
                    s.instance(),
                    StateView.of(s.latest()),
                    s.series().stream().map(StateView::of).toList());
        }
    }

    @JsonInclude(JsonInclude.Include.ALWAYS)
    record PdView(
            @JsonProperty("job") String job,
            @JsonProperty("instance") String instance,
            @JsonProperty("kind") String kind,
            @JsonProperty("name") String name,
            @JsonProperty("rid") String rid,
            @JsonProperty("rank") String rank,
            @JsonProperty("peer") String peer,
            @JsonProperty("start_ns") long startNs,
            @JsonProperty("dur_ns") long durNs,
            @JsonProperty("dur_ms") double durMs,
            @JsonProperty("blocks") Long blocks,
            @JsonProperty("labels") Map<String, String> labels) {
        static PdView of(PdRecord p) {
            return new PdView(
                    p.job(),
                    p.instance(),
                    p.kind(),
                    p.name(),
                    p.rid(),
                    p.rank(),
                    p.peer(),
                    p.startNs(),
                    p.durNs(),
                    p.durNs() / 1e6,
                    p.blocks(),
                    p.labels());
        }
    }

    @JsonInclude(JsonInclude.Include.ALWAYS)
    record CoordinatorView(
            @JsonProperty("node") String node,
            @JsonProperty("time_ns") long timeNs,
            @JsonProperty("name") String name,
            @JsonProperty("added") long added,
            @JsonProperty("ended") long ended,
            @JsonProperty("running") long running) {
        static CoordinatorView of(CoordinatorRecord c) {
            return new CoordinatorView(c.node(), c.timeNs(), c.name(), c.added(), c.ended(), c.running());
        }
    }

    @JsonInclude(JsonInclude.Include.ALWAYS)
    record InstanceCoordinatorView(
            @JsonProperty("job") String job,
            @JsonProperty("instance") String instance,
            @JsonProperty("nodes") List<CoordinatorView> nodes,
            @JsonProperty("recent") List<CoordinatorView> recent) {
        static InstanceCoordinatorView of(ServiceStore.InstanceCoordinator c) {
            return new InstanceCoordinatorView(
                    c.job(),
                    c.instance(),
                    c.nodes().stream().map(CoordinatorView::of).toList(),
                    c.recent().stream().map(CoordinatorView::of).toList());
        }
    }

    /**
     * One instance's EP balance as a matrix: {@code layers} (rows, MoE layer ordinals seen) x {@code ranks}
     * (columns, numeric order); a (layer, rank) without GroupedMatmul calls is null. {@code rank_total_ns} sums each
     * rank's column; {@code max_ratio_to_layer_mean} is the worst cell (1.0 = balanced).
     */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    record InstanceEpView(
            @JsonProperty("job") String job,
            @JsonProperty("instance") String instance,
            @JsonProperty("moe_layers") int moeLayers,
            @JsonProperty("layers") List<Integer> layers,
            @JsonProperty("ranks") List<String> ranks,
            @JsonProperty("mean_ns") List<List<Double>> meanNs,
            @JsonProperty("total_ns") List<List<Long>> totalNs,
            @JsonProperty("count") List<List<Long>> count,
            @JsonProperty("ratio_to_layer_mean") List<List<Double>> ratioToLayerMean,
            @JsonProperty("rank_total_ns") List<Long> rankTotalNs,
            @JsonProperty("max_ratio_to_layer_mean") Double maxRatio) {
        static InstanceEpView of(ServiceStore.InstanceEp ep) {
            TreeSet<Integer> layerSet = new TreeSet<>();
            TreeSet<String> rankSet = new TreeSet<>(ServiceStore.RANK_ORDER);
            Map<String, EpBalanceRecord> cells = new LinkedHashMap<>();
            int moeLayers = 0;
            for (EpBalanceRecord c : ep.cells()) {
                layerSet.add(c.layer());
                rankSet.add(c.rank());
                cells.put(c.layer() + "\u0000" + c.rank(), c);
                moeLayers = Math.max(moeLayers, c.moeLayers());
            }
            List<Integer> layers = List.copyOf(layerSet);
            List<String> ranks = List.copyOf(rankSet);
            List<List<Double>> mean = new ArrayList<>();
            List<List<Long>> total = new ArrayList<>();
            List<List<Long>> count = new ArrayList<>();
            List<List<Double>> ratio = new ArrayList<>();
            long[] rankTotal = new long[ranks.size()];
            Double maxRatio = null;
            for (int layer : layers) {
                List<Double> m = new ArrayList<>();
                List<Long> t = new ArrayList<>();
                List<Long> n = new ArrayList<>();
                List<Double> r = new ArrayList<>();
                for (int j = 0; j < ranks.size(); j++) {
                    EpBalanceRecord c = cells.get(layer + "\u0000" + ranks.get(j));
                    m.add(c == null ? null : c.meanNs());
                    t.add(c == null ? null : c.totalNs());
                    n.add(c == null ? null : c.count());
                    r.add(c == null ? null : c.ratioToLayerMean());
                    if (c != null) {
                        rankTotal[j] += c.totalNs();
                        maxRatio = maxRatio == null ? c.ratioToLayerMean() : Math.max(maxRatio, c.ratioToLayerMean());
                    }
                }
                mean.add(m);
                total.add(t);
                count.add(n);
                ratio.add(r);
            }
            List<Long> totals = new ArrayList<>();
            for (long v : rankTotal) {
                totals.add(v);
            }
            return new InstanceEpView(
                    ep.job(), ep.instance(), moeLayers, layers, ranks, mean, total, count, ratio, totals, maxRatio);
        }
    }

    @JsonInclude(JsonInclude.Include.ALWAYS)
    record MoeRankView(
            @JsonProperty("rank") String rank,
            @JsonProperty("count") long count,
            @JsonProperty("p2_5_ns") double p25Ns,
            @JsonProperty("p50_ns") double p50Ns,
            @JsonProperty("p97_5_ns") double p975Ns,
            @JsonProperty("mean_ns") double meanNs,
            @JsonProperty("p2_5_ms") double p25Ms,
            @JsonProperty("p50_ms") double p50Ms,
            @JsonProperty("p97_5_ms") double p975Ms,
            @JsonProperty("mean_ms") double meanMs,
            @JsonProperty("slowest_count") long slowestCount,
            @JsonProperty("aligned_calls") long alignedCalls,
            @JsonProperty("slowest_share") Double slowestShare) {
        static MoeRankView of(MoeRecord m) {
            return new MoeRankView(
                    m.rank(),
                    m.count(),
                    m.p2_5Ns(),
                    m.p50Ns(),
                    m.p97_5Ns(),
                    m.meanNs(),
                    m.p2_5Ns() / 1e6,
                    m.p50Ns() / 1e6,
                    m.p97_5Ns() / 1e6,
                    m.meanNs() / 1e6,
                    m.slowestCount(),
                    m.alignedCalls(),
                    m.slowestShare());
        }
    }

    /** One MoE collective of one instance: per rank, and the rank most often slowest (null before any comparison). */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    record MoeOpView(
            @JsonProperty("op") String op,
            @JsonProperty("slowest_rank") String slowestRank,
            @JsonProperty("ranks") List<MoeRankView> ranks) {}

    @JsonInclude(JsonInclude.Include.ALWAYS)
    record InstanceMoeView(
            @JsonProperty("job") String job,
            @JsonProperty("instance") String instance,
            @JsonProperty("ops") List<MoeOpView> ops) {
        static InstanceMoeView of(ServiceStore.InstanceMoe moe) {
            Map<String, List<MoeRecord>> byOp = new LinkedHashMap<>();
            for (MoeRecord m : moe.entries()) {
                byOp.computeIfAbsent(m.op(), k -> new ArrayList<>()).add(m);
            }
            List<MoeOpView> ops = new ArrayList<>();
            byOp.forEach((op, entries) -> {
                MoeRecord slowest = null;
                for (MoeRecord m : entries) { // rank order: the first of equal counts wins
                    if (m.slowestCount() > 0 && (slowest == null || m.slowestCount() > slowest.slowestCount())) {
                        slowest = m;
                    }
                }
                ops.add(new MoeOpView(
                        op,
                        slowest == null ? null : slowest.rank(),
                        entries.stream().map(MoeRankView::of).toList()));
            });
            return new InstanceMoeView(moe.job(), moe.instance(), ops);
        }
    }
}
