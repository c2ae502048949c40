package io.llmprof.agent.synth;

import com.fasterxml.jackson.databind.annotation.JsonSerialize;
import com.fasterxml.jackson.databind.ser.std.ToStringSerializer;
import java.nio.file.Path;
import java.util.List;

/**
 * Ground truth of one rank's trace, in the terms of the pass/layer segmentation of ANALYSIS.md section 2: layers
 * are anchor-delimited, so with an opening anchor the kernels before the first anchor are the prologue and the
 * last layer runs to the end of the pass (it holds the final norm, lm_head and sampling); with a closing anchor
 * block 0 starts at the pass start and the kernels after the last anchor are the epilogue. Kernel indexes count
 * kernels (cat "kernel", all streams) of one pass in start-time order, which is the order they are generated in.
 *
 * @param rank distributedInfo.rank
 * @param file the trace file
 * @param bytes file size
 * @param device GPU id (args.device, and the pid of GPU events)
 * @param hostPid pid (and tid) of the host thread
 * @param passes passes in the file
 * @param profile dsv4_csa_hca, dsv3_mla or generic
 * @param anchorPattern the anchor kernel as ANALYSIS.md names it (a substring of the kernel name)
 * @param anchorKernel the full anchor kernel name as written
 * @param anchorRole "opens" or "closes"
 * @param blocksPerLayer anchors per layer
 * @param halfLabels labels of the blocks of a layer
 * @param layers layer count
 * @param kernelsPerPass kernels per pass (every pass has the same sequence)
 * @param prologueKernels kernels before the first layer (opening anchor only; 0 with a closing anchor)
 * @param epilogueKernels kernels after the last anchor (closing anchor only; 0 with an opening anchor)
 * @param anchorsPerPass layers x blocksPerLayer
 * @param allReducesPerPass all-reduce kernels per pass (0 with one rank)
 * @param memcpysPerPass gpu_memcpy events per pass (not kernels)
 * @param launchesPerPass kernel launch calls per pass: one per kernel (eager) or 1 (graph)
 * @param layerTruths one entry per layer
 * @param kernelNames the kernel names of one pass, in order
 * @param passTruths one entry per pass
 */
public record RankTruth(
        int rank,
        @JsonSerialize(using = ToStringSerializer.class) Path file,
        long bytes,
        int device,
        int hostPid,
        int passes,
        String profile,
        String anchorPattern,
        String anchorKernel,
        String anchorRole,
        int blocksPerLayer,
        List<String> halfLabels,
        int layers,
        int kernelsPerPass,
        int prologueKernels,
        int epilogueKernels,
        int anchorsPerPass,
        int allReducesPerPass,
        int memcpysPerPass,
        int launchesPerPass,
        List<LayerTruth> layerTruths,
        List<String> kernelNames,
        List<PassTruth> passTruths) {
    public RankTruth {
        halfLabels = List.copyOf(halfLabels);
        layerTruths = List.copyOf(layerTruths);
        kernelNames = List.copyOf(kernelNames);
        passTruths = List.copyOf(passTruths);
    }

    /** Kernels of every pass of the file. */
    public long totalKernels() {
        return (long) kernelsPerPass * passes;
    }

    /** Anchor kernels in the file: passes x layers x blocks per layer. */
    public long totalAnchors() {
        return (long) anchorsPerPass * passes;
    }

    public List<Integer> kernelsPerLayer() {
        return layerTruths.stream().map(LayerTruth::kernels).toList();
    }
}
