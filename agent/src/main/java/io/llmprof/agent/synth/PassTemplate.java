package io.llmprof.agent.synth;

import java.util.ArrayList;
import java.util.List;

/** The kernel sequence of every pass, and where anchor segmentation puts its layer boundaries. */
final class PassTemplate {
    final Profile profile;
    final int layers;
    final KernelSpec[] kernels;
    final int prologueKernels;
    final int epilogueKernels;
    final List<LayerTruth> layerTruths;
    final String anchorKernel;
    final int anchors;
    final int allReduces;

    private PassTemplate(
            Profile profile,
            int layers,
            KernelSpec[] kernels,
            int prologueKernels,
            int epilogueKernels,
            List<LayerTruth> layerTruths,
            String anchorKernel,
            int anchors,
            int allReduces) {
        this.profile = profile;
        this.layers = layers;
        this.kernels = kernels;
        this.prologueKernels = prologueKernels;
        this.epilogueKernels = epilogueKernels;
        this.layerTruths = layerTruths;
        this.anchorKernel = anchorKernel;
        this.anchors = anchors;
        this.allReduces = allReduces;
    }

    static PassTemplate of(ModelConfig config, Profile profile, int layers, List<KernelSpec> list) {
        KernelSpec[] kernels = list.toArray(KernelSpec[]::new);
        int bpl = profile.blocksPerLayer();
        int expected = layers * bpl;
        int[] anchorAt = new int[expected];
        int found = 0;
        String anchorKernel = null;
        int allReduces = 0;
        for (int i = 0; i < kernels.length; i++) {
            KernelSpec k = kernels[i];
            boolean matches = k.name().contains(profile.anchorPattern);
            if (matches != k.anchor()) {
                throw new IllegalStateException("kernel " + i + " (" + k.name() + ") breaks the anchor rule");
            }
            if (k.anchor()) {
                if (found == expected) {
                    throw new IllegalStateException("more anchors than " + expected);
                }
                anchorAt[found++] = i;
                anchorKernel = k.name();
            }
            if (k.comm() == KernelSpec.Comm.ALL_REDUCE) {
                allReduces++;
            }
        }
        if (found != expected) {
            throw new IllegalStateException("expected " + expected + " anchors, built " + found);
        }
        int prologue;
        int epilogue;
        int[] first = new int[layers];
        int[] end = new int[layers];
        if (profile.closes()) {
            prologue = 0;
            epilogue = kernels.length - 1 - anchorAt[expected - 1];
            for (int l = 0; l < layers; l++) {
                first[l] = l == 0 ? 0 : anchorAt[l * bpl - 1] + 1;
                end[l] = anchorAt[l * bpl + bpl - 1] + 1;
            }
        } else {
            prologue = anchorAt[0];
            epilogue = 0;
            for (int l = 0; l < layers; l++) {
                first[l] = anchorAt[l * bpl];
                end[l] = l == layers - 1 ? kernels.length : anchorAt[(l + 1) * bpl];
            }
        }
        List<LayerTruth> truths = new ArrayList<>(layers);
        boolean hasRatios = !config.compressRatios().isEmpty();
        for (int l = 0; l < layers; l++) {
            int ar = 0;
            for (int i = first[l]; i < end[l]; i++) {
                if (kernels[i].comm() == KernelSpec.Comm.ALL_REDUCE) {
                    ar++;
                }
            }
            truths.add(new LayerTruth(
                    l,
                    layerType(config, l, layers),
                    first[l],
                    end[l] - first[l],
                    ar,
                    config.isMoe(l),
                    hasRatios ? config.compressRatio(l) : null));
        }
        return new PassTemplate(
                profile, layers, kernels, prologue, epilogue, List.copyOf(truths), anchorKernel, expected, allReduces);
    }

    /** ANALYSIS.md section 2 layer types; the first that applies wins. */
    static String layerType(ModelConfig config, int layer, int layers) {
        if (layer == 0) {
            return "FIRST";
        }
        if (layer < config.numHashLayers()) {
            return "HASH";
        }
        if (layer == layers - 1) {
            return "FINAL";
        }
        if (!config.compressRatios().isEmpty()) {
            int ratio = config.compressRatio(layer);
            return switch (ratio) {
                case 0 -> "FULL_ATTN";
                case 4 -> "C4_LIGHT";
                case 128 -> "C128_HEAVY";
                default -> "CR" + ratio;
            };
        }
        if (config.routedExperts() > 0) {
            return config.isMoe(layer) ? "MOE" : "DENSE";
        }
        return "LAYER";
    }

    List<String> kernelNames() {
        List<String> names = new ArrayList<>(kernels.length);
        for (KernelSpec k : kernels) {
            names.add(k.name());
        }
        return names;
    }
}
