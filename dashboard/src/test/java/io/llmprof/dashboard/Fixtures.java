package io.llmprof.dashboard;

import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.RankHardware;
import io.llmprof.events.Segment;
import io.llmprof.events.view.HardwareView;
import java.util.List;
import java.util.Map;

/** Wire records for tests, with fixed, readable numbers. */
public final class Fixtures {
    private Fixtures() {}

    /** A complete pass of 2 layers; times are ns, wall = 2 ms + index µs. */
    public static PassRecord pass(String job, String rank, long index) {
        return pass(job, "run-1", rank, index, true);
    }

    public static PassRecord pass(String job, String run, String rank, long index, boolean complete) {
        long start = 1_000_000_000L + index * 10_000_000L;
        long wall = 2_000_000L + index * 1_000L;
        return new PassRecord(
                job,
                run,
                rank,
                "llama",
                "flash_fwd",
                2,
                1,
                index,
                start,
                start + wall,
                wall,
                wall - 100_000L,
                wall + 50_000L,
                40,
                complete,
                true,
                new Segment(10_500L, 9_000L, 2),
                new Segment(20_250L, 18_000L, 3),
                2,
                complete ? "next_pass" : "resync",
                List.of());
    }

    /** A complete pass (wall 2 ms + index µs) with a step marker's {@code phase} (null: none) and steady flag. */
    public static PassRecord pass(String job, String rank, long index, String phase, boolean steady, boolean complete) {
        PassRecord p = pass(job, "run-1", rank, index, complete);
        return new PassRecord(
                        p.job(),
                        p.run(),
                        p.rank(),
                        p.profile(),
                        p.anchor(),
                        p.numLayers(),
                        p.blocksPerLayer(),
                        p.index(),
                        p.startNs(),
                        p.endNs(),
                        p.wallNs(),
                        p.busyNs(),
                        p.sumNs(),
                        p.kernels(),
                        p.complete(),
                        p.steady(),
                        p.prologue(),
                        p.epilogue(),
                        p.layerCount(),
                        p.closedBy(),
                        p.notes(),
                        phase,
                        null,
                        null,
                        null,
                        PassRecord.BOUNDARY_MARKER,
                        0L)
                .withSteady(steady);
    }

    /** Layer {@code layer} of pass {@code index}: 800.123 µs of wall. */
    public static LayerRecord layer(String job, String rank, long index, int layer) {
        return layer(job, "run-1", rank, index, layer);
    }

    public static LayerRecord layer(String job, String run, String rank, long index, int layer) {
        long start = 1_000_000_000L + index * 10_000_000L + layer * 900_000L;
        return new LayerRecord(
                job,
                run,
                rank,
                index,
                layer,
                "decoder",
                start,
                start + 800_123L,
                800_123L,
                700_000L,
                750_000L,
                20,
                1,
                Map.of("gemm", 500_000L, "attention", 250_000L));
    }

    /**
     * Where a rank ran, as the agent sends it: an H100 on device {@code device} of 8, NCCL world size 2, TP 2 from a
     * process group, EP not stated ({@code ep} and {@code gpu_note} null, written as null).
     */
    public static RankHardware hardware(String job, String rank, int device) {
        return new RankHardware(job, "run-1", rank, "/traces/rank" + rank + ".json", view(device));
    }

    public static HardwareView view(int device) {
        return new HardwareView(
                device,
                "NVIDIA H100 80GB HBM3",
                null,
                132,
                85_029_158_912L,
                "9.0",
                8,
                "nccl",
                String.valueOf(device),
                2,
                2,
                "process group 1 (pg_desc tp)",
                null,
                "not stated: no process group names EP",
                List.of(
                        new HardwareView.GroupView("0", "default_pg", "nccl", 2),
                        new HardwareView.GroupView("1", "tp", "nccl", 2)));
    }
}
