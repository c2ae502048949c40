package io.llmprof.dashboard.api;

import static io.llmprof.dashboard.Fixtures.hardware;
import static io.llmprof.dashboard.Fixtures.pass;
import static io.llmprof.dashboard.Fixtures.view;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.javalin.Javalin;
import io.llmprof.dashboard.feed.FeedStatus;
import io.llmprof.dashboard.live.LiveConfig;
import io.llmprof.dashboard.live.LiveHub;
import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.dashboard.store.HostStore;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.dashboard.store.QualityStore;
import io.llmprof.dashboard.store.ServiceLimits;
import io.llmprof.dashboard.store.ServiceStore;
import io.llmprof.dashboard.store.StoreLimits;
import io.llmprof.events.Json;
import io.llmprof.events.RankHardware;
import io.llmprof.events.view.HardwareView;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Where each rank ran: {@code hardware} and {@code hardware_line} in {@code /api/ranks}, and {@code /hardware}. */
class HardwareApiTest {
    /** The field order `analyze layers --format json` prints under {@code ranks[].hardware}. */
    private static final List<String> HARDWARE_FIELDS = List.of(
            "device",
            "gpu",
            "gpu_note",
            "sms",
            "memory_bytes",
            "compute_capability",
            "devices_listed",
            "backend",
            "trace_rank",
            "world_size",
            "tp",
            "tp_source",
            "ep",
            "ep_source",
            "process_groups");

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final PassStore store = new PassStore(new StoreLimits(50, 10));
    private Javalin app;
    private TestHttp http;

    @BeforeEach
    void start() {
        app = DashboardApi.create(
                        store,
                        registry,
                        () -> new FeedStatus(FeedStatus.State.RUNNING, 1, 0, 0, Optional.empty(), Optional.empty()))
                .start("127.0.0.1", 0);
        http = new TestHttp(app.port());
    }

    @AfterEach
    void stop() {
        app.stop();
    }

    @Test
    void aRankWithoutHardwareSaysNullForBoth() throws Exception {
        store.addPass(pass("llama", "0", 0));

        JsonNode rank = http.get("/api/ranks").json().get("ranks").get(0);

        assertThat(rank.has("hardware")).isTrue();
        assertThat(rank.get("hardware").isNull()).isTrue();
        assertThat(rank.has("hardware_line")).isTrue();
        assertThat(rank.get("hardware_line").isNull()).isTrue();
    }

    @Test
    void eachRankCarriesItsHardwareExactlyAsAnalyzeLayersPrintsIt() throws Exception {
        store.addPass(pass("llama", "0", 0));
        store.addPass(pass("llama", "1", 0));
        store.hardware().put(hardware("llama", "1", 1));
        HardwareView view = view(1);

        TestHttp.Response r = http.get("/api/ranks");

        assertThat(r.status()).isEqualTo(200);
        // Same mapper, same record: the same bytes, nulls written, in the same order, followed by the line.
        assertThat(r.body())
                .contains("\"hardware\":" + Json.mapper().writeValueAsString(view) + ",\"hardware_line\":"
                        + Json.mapper().writeValueAsString(view.line("1")) + "}");
        JsonNode hardware = r.json().get("ranks").get(1).get("hardware");
        List<String> fields = new ArrayList<>();
        hardware.fieldNames().forEachRemaining(fields::add);
        assertThat(fields).containsExactlyElementsOf(HARDWARE_FIELDS);
        assertThat(hardware.get("gpu_note").isNull()).isTrue();
        assertThat(hardware.get("memory_bytes").asLong()).isEqualTo(85_029_158_912L);
        assertThat(hardware.get("process_groups").get(1).get("desc").asText()).isEqualTo("tp");
        assertThat(r.json().get("ranks").get(1).get("hardware_line").asText())
                .isEqualTo("rank 1: GPU NVIDIA H100 80GB HBM3 (device 1 of 8 listed; 132 SMs, 79.2 GiB, compute 9.0);"
                        + " nccl, rank 1 of world size 2; TP 2 (process group 1 (pg_desc tp)), EP ? (not stated: no"
                        + " process group names EP)");
        assertThat(r.json().get("ranks").get(0).get("hardware").isNull()).isTrue();
    }

    @Test
    void answersTheRanksRecordAsSent() throws Exception {
        store.addPass(pass("llama", "0", 0));
        RankHardware record = hardware("llama", "0", 0);
        store.hardware().put(record);

        TestHttp.Response r = http.get("/api/ranks/0/hardware");

        assertThat(r.status()).isEqualTo(200);
        assertThat(r.contentType()).startsWith("application/json");
        // the trace file's absolute path is reduced to its name, as in dead letters (no --show-internals)
        RankHardware shown =
                new RankHardware(record.job(), record.run(), record.rank(), "rank0.json", record.hardware());
        assertThat(r.body()).isEqualTo(Json.mapper().writeValueAsString(shown));
    }

    @Test
    void withShowInternalsTheSourceIsThePathTheAgentRead() throws Exception {
        store.addPass(pass("llama", "0", 0));
        RankHardware record = hardware("llama", "0", 0);
        store.hardware().put(record);
        Javalin shown = DashboardApi.create(
                        store,
                        new HostStore(50, HostStore.DEFAULT_MAX_JOBS),
                        new ServiceStore(ServiceLimits.defaults()),
                        new QualityStore(true),
                        new LiveHub(LiveConfig.defaults(), new DashboardMeters(registry, 50)),
                        (job, run) -> {},
                        registry,
                        () -> new FeedStatus(FeedStatus.State.RUNNING, 1, 0, 0, Optional.empty(), Optional.empty()))
                .start("127.0.0.1", 0);
        try {
            TestHttp.Response r = new TestHttp(shown.port()).get("/api/ranks/0/hardware");
            assertThat(r.body()).isEqualTo(Json.mapper().writeValueAsString(record));
            assertThat(r.json().get("source").asText()).isEqualTo("/traces/rank0.json");
        } finally {
            shown.stop();
        }
    }

    /** The agent sends the hardware when it ships the trace file, so it usually comes before the first pass. */
    @Test
    void aRankWithHardwareButNoPassYetIsReachable() throws Exception {
        RankHardware record = hardware("llama", "3", 3);
        store.hardware().put(record);

        assertThat(http.get("/api/ranks/3/hardware").json().get("hardware"))
                .isEqualTo(Json.mapper().valueToTree(record.hardware()));
        assertThat(http.get("/api/ranks/3/hardware?job=llama").status()).isEqualTo(200);
        assertThat(http.get("/api/ranks").json().get("ranks")).isEmpty();
    }

    @Test
    void aRankWithPassesButNoHardwareIs404WithWhatToExpect() throws Exception {
        store.addPass(pass("llama", "0", 0));

        TestHttp.Response r = http.get("/api/ranks/0/hardware?job=llama");

        assertThat(r.status()).isEqualTo(404);
        assertThat(r.json().get("error").asText()).isEqualTo("no_hardware");
        assertThat(r.json().get("message").asText())
                .contains("llama/0")
                .contains("the agent sends one")
                .contains("when it ships the rank's trace file");
    }

    @Test
    void aRankSeenNowhereIsAnUnknownRank() throws Exception {
        store.hardware().put(hardware("llama", "0", 0));

        TestHttp.Response byRank = http.get("/api/ranks/7/hardware");
        TestHttp.Response byJob = http.get("/api/ranks/0/hardware?job=other");

        assertThat(byRank.status()).isEqualTo(404);
        assertThat(byRank.json().get("error").asText()).isEqualTo("unknown_rank");
        assertThat(byJob.status()).isEqualTo(404);
        assertThat(byJob.json().get("error").asText()).isEqualTo("unknown_rank");
        assertThat(byJob.json().get("message").asText()).contains("'other'");
    }

    @Test
    void aJobInTheQueryChoosesBetweenJobsSharingARank() throws Exception {
        store.addPass(pass("a", "0", 0));
        store.hardware().put(hardware("a", "0", 0));
        store.hardware().put(hardware("b", "0", 4)); // job b: hardware only

        TestHttp.Response ambiguous = http.get("/api/ranks/0/hardware");
        TestHttp.Response b = http.get("/api/ranks/0/hardware?job=b");

        assertThat(ambiguous.status()).isEqualTo(400);
        assertThat(ambiguous.json().get("error").asText()).isEqualTo("ambiguous_rank");
        assertThat(ambiguous.json().get("message").asText()).contains("[a, b]");
        assertThat(b.status()).isEqualTo(200);
        assertThat(b.json().get("job").asText()).isEqualTo("b");
        assertThat(b.json().get("hardware").get("device").asInt()).isEqualTo(4);
        assertThat(http.get("/api/ranks?job=a")
                        .json()
                        .get("ranks")
                        .get(0)
                        .get("hardware")
                        .get("device")
                        .asInt())
                .isZero();
    }

    @Test
    void aTombstonedRecordIsGone() throws Exception {
        store.addPass(pass("llama", "0", 0));
        store.hardware().put(hardware("llama", "0", 0));
        store.hardware().remove("llama/0");

        assertThat(http.get("/api/ranks/0/hardware").status()).isEqualTo(404);
        assertThat(http.get("/api/ranks")
                        .json()
                        .get("ranks")
                        .get(0)
                        .get("hardware")
                        .isNull())
                .isTrue();
    }
}
