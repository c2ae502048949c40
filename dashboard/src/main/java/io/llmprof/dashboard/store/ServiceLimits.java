package io.llmprof.dashboard.store;

/**
 * Bounds of a {@link ServiceStore}: memory stays flat however many requests the instances serve.
 *
 * @param maxInstances (job, instance) pairs held, least recently updated dropped first
 * @param requestsPerInstance latest finished/timed-out requests held per instance (also the largest {@code ?limit=})
 * @param slowestPerInstance requests held per instance and latency ({@code e2e}, {@code ttft}, {@code tpot},
 *     {@code queue}) as the slowest ever seen, kept even after they left the ring of latest requests
 * @param recordsPerInstance latest batches, forwards, KV states, state snapshots, PD and coordinator records held
 *     per instance and kind
 * @param cellsPerInstance EP-balance (layer, rank) cells and MoE (op, rank) entries held per instance
 */
public record ServiceLimits(
        int maxInstances,
        int requestsPerInstance,
        int slowestPerInstance,
        int recordsPerInstance,
        int cellsPerInstance) {
    public static final int DEFAULT_MAX_INSTANCES = 16;
    public static final int DEFAULT_REQUESTS_PER_INSTANCE = 10_000;
    public static final int DEFAULT_SLOWEST_PER_INSTANCE = 1_000;
    public static final int DEFAULT_RECORDS_PER_INSTANCE = 2_000;
    public static final int DEFAULT_CELLS_PER_INSTANCE = 65_536;

    public ServiceLimits {
        positive("maxInstances", maxInstances);
        positive("requestsPerInstance", requestsPerInstance);
        positive("slowestPerInstance", slowestPerInstance);
        positive("recordsPerInstance", recordsPerInstance);
        positive("cellsPerInstance", cellsPerInstance);
    }

    public static ServiceLimits defaults() {
        return new ServiceLimits(
                DEFAULT_MAX_INSTANCES,
                DEFAULT_REQUESTS_PER_INSTANCE,
                DEFAULT_SLOWEST_PER_INSTANCE,
                DEFAULT_RECORDS_PER_INSTANCE,
                DEFAULT_CELLS_PER_INSTANCE);
    }

    private static void positive(String name, int value) {
        if (value < 1) {
            throw new IllegalArgumentException(name + " must be >= 1, got " + value);
        }
    }
}
