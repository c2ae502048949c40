package io.llmprof.agent.cli;

import io.llmprof.agent.kineto.ReaderOptions;
import picocli.CommandLine;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/** The order a trace file's events are read and shipped in (`agent replay`, `agent watch`, `agent bench`). */
final class ReadOrderOptions {
    @Option(
            names = "--exact-order",
            negatable = true,
            defaultValue = "true",
            fallbackValue = "true",
            description = "Ship every lane in exact start-time order whatever the file's order, the lanes"
                    + " interleaved by time: each lane is sorted (in memory up to an eighth of the heap for all files"
                    + " together, 256 MiB at most, on disk beyond) and a file's events are sent once it has been read,"
                    + " so the results are those of llmprof analyze of the file (default). --no-exact-order sends"
                    + " events as they are read, in time order within --reorder-window; events further out of order"
                    + " are then sent late and reported (OUT_OF_ORDER), and kernel categories and host figures that"
                    + " need their order may differ.")
    boolean exactOrder = true;

    @Option(
            names = "--host-first",
            description = "Ship each file's lanes as the file holds them (all host events, then the GPU's), not"
                    + " interleaved by time. Interleaving spools the lane that runs ahead to a temp directory and"
                    + " starts sending once both lanes have begun (at the first kernel of a host-first file); the"
                    + " streams app then holds far less state. The results are the same. Implies --no-exact-order.")
    boolean hostFirst;

    @Option(
            names = "--reorder-window",
            paramLabel = "N",
            defaultValue = "" + ReaderOptions.DEFAULT_REORDER_WINDOW,
            description = "Events held per (rank, lane), about 150 bytes each (default: ${DEFAULT-VALUE}): with"
                    + " --no-exact-order the window that restores time order; with exact order the events sorted at a"
                    + " time before they are set aside.")
    int reorderWindow;

    /**
     * How to read: every lane sorted (exact order), or time order restored within the window and the lanes interleaved
     * unless host-first.
     *
     * @param command whose usage error a window below 1 is
     */
    ReaderOptions readerOptions(CommandLine command) {
        if (reorderWindow < 1) {
            throw new ParameterException(command, "--reorder-window must be at least 1, got " + reorderWindow);
        }
        return ReaderOptions.defaults()
                .withReorderWindow(reorderWindow)
                .withInterleavedLanes(!hostFirst)
                .withExactOrder(exactOrder && !hostFirst);
    }
}
