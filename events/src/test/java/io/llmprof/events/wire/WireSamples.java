package io.llmprof.events.wire;

import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/** Random batches for property-style round trips: nulls, extreme and negative times, unicode, empty batches. */
final class WireSamples {
    private static final String[] NAMES = {
        "",
        "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn",
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, float*)",
        "ProfilerStep#7",
        "cudaLaunchKernel",
        "aten::mm",
        "注意力 層 ünïcödé",
        "emoji \uD83D\uDE80 rocket",
        "tab\tnew\nline \"quoted\" \\ back",
        "nccl:all_reduce"
    };

    private final Random random;

    WireSamples(long seed) {
        random = new Random(seed);
    }

    TraceBatch traceBatch() {
        int n = random.nextInt(5) == 0 ? 0 : random.nextInt(60);
        List<TraceEvent> events = new ArrayList<>(n);
        long start = time();
        for (int i = 0; i < n; i++) {
            // Mostly ordered, as readers send them; sometimes anything at all.
            start = random.nextInt(10) == 0 ? time() : start + random.nextInt(5_000);
            TraceEvent.Kind kind = TraceEvent.Kind.values()[random.nextInt(TraceEvent.Kind.values().length)];
            events.add(new TraceEvent(
                    kind,
                    name(),
                    start,
                    random.nextInt(8) == 0 ? Long.MAX_VALUE : random.nextInt(1_000_000),
                    random.nextBoolean() ? null : pick(0, -1, Integer.MAX_VALUE, Integer.MIN_VALUE, random.nextInt(8)),
                    nullableLong(),
                    nullableLong(),
                    nullableLong(),
                    random.nextBoolean() ? null : pick("", "[[4096, 4096], [4096]]", name()),
                    nullableLong()));
        }
        return new TraceBatch(
                name(),
                name(),
                String.valueOf(random.nextInt(64)),
                random.nextBoolean() ? TraceBatch.Lane.GPU : TraceBatch.Lane.HOST,
                "/traces/" + name(),
                random.nextInt(4) == 0 ? Long.MAX_VALUE : random.nextInt(100_000),
                events,
                random.nextBoolean());
    }

    ServiceBatch serviceBatch() {
        int n = random.nextInt(5) == 0 ? 0 : random.nextInt(40);
        List<ServiceEvent> events = new ArrayList<>(n);
        long start = time();
        for (int i = 0; i < n; i++) {
            start = random.nextInt(10) == 0 ? time() : start + random.nextInt(5_000);
            List<RequestRef> requests = new ArrayList<>();
            for (int r = random.nextInt(4); r > 0; r--) {
                String rid = pick("0", "17", "chatcmpl-" + random.nextInt(1000), name());
                requests.add(new RequestRef(
                        rid,
                        random.nextBoolean() ? rid : rid + "-0a1b2c3d",
                        random.nextBoolean() ? null : nullableLong(),
                        random.nextBoolean() ? null : pick("prefill", "decode", ""),
                        random.nextBoolean() ? null : nullableLong()));
            }
            events.add(new ServiceEvent(
                    random.nextInt(6) == 0 ? null : pick("Request", "Schedule", "KVCache", "", name()),
                    name(),
                    start,
                    random.nextBoolean() ? null : (random.nextInt(8) == 0 ? Long.MAX_VALUE : random.nextInt(9_999)),
                    nullableLong(),
                    random.nextBoolean() ? null : name(),
                    requests,
                    numbers(),
                    numbers(),
                    labels()));
        }
        return new ServiceBatch(
                name(),
                name(),
                random.nextBoolean() ? "http:127.0.0.1:" + random.nextInt(65536) : "/data/" + name(),
                random.nextInt(4) == 0 ? Long.MAX_VALUE : random.nextInt(100_000),
                events,
                random.nextBoolean());
    }

    private Map<String, Double> numbers() {
        Map<String, Double> m = new HashMap<>();
        for (int i = random.nextInt(4); i > 0; i--) {
            m.put(
                    pick("QueueSize", "batchSize", "usedBlocks", name()),
                    pick(0.0, -0.0, 1.5, -3.0, Double.MAX_VALUE, Double.MIN_VALUE, 1e-300, random.nextGaussian()));
        }
        return m;
    }

    private Map<String, String> labels() {
        Map<String, String> m = new HashMap<>();
        for (int i = random.nextInt(4); i > 0; i--) {
            m.put(pick("scope#dp", "status", name()), pick("", "prefill", name()));
        }
        return m;
    }

    private long time() {
        return pick(0L, -1L, Long.MIN_VALUE, Long.MAX_VALUE, 1_700_000_000_000_000_000L, random.nextLong());
    }

    private Long nullableLong() {
        return random.nextInt(3) == 0 ? null : pick(0L, -1L, Long.MIN_VALUE, Long.MAX_VALUE, random.nextLong() >> 20);
    }

    private String name() {
        return NAMES[random.nextInt(NAMES.length)];
    }

    @SafeVarargs
    private <T> T pick(T... values) {
        return values[random.nextInt(values.length)];
    }
}
