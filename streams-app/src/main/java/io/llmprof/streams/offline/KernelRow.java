package io.llmprof.streams.offline;

/**
 * One kernel (or memcpy / memset) of a layer, with its launch's cpu_op when the trace links them.
 *
 * @param order position in the layer in execution (start) order, from 0
 * @param simplified display name; "memcpy" / "memset" for copies
 * @param family family label (the display name with its template kinds); "memcpy" / "memset" for copies
 * @param category the segmenter's category for the row (from its launch context where it had one)
 * @param half the profile's half label of the block holding it; null with one block per layer
 * @param cpuOp name of the cpu_op whose External id the launch carries; null when not linked
 * @param inputDims that cpu_op's Input Dims as compact JSON; null when not linked or absent
 */
record KernelRow(
        int order,
        String name,
        String simplified,
        String family,
        String category,
        String half,
        long startNs,
        long durNs,
        Long correlation,
        Long externalId,
        String cpuOp,
        String inputDims) {
    KernelRow withLaunch(Long externalId, String cpuOp, String inputDims) {
        return new KernelRow(
                order,
                name,
                simplified,
                family,
                category,
                half,
                startNs,
                durNs,
                correlation,
                externalId,
                cpuOp,
                inputDims);
    }
}
