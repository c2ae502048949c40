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
    /** Kernels of a pass without the draft layer; {@link #kernels} may go on with a draft layer's. */
    final int mainKernels;
    /** Index of each layer's first anchor kernel (0..layers-1). */
    final int[] firstAnchorOfLayer;

    private PassTemplate(
            Profile profile,
            int layers,
            KernelSpec[] kernels,
            int prologueKernels,
            int epilogueKernels,
            List<LayerTruth> layerTruths,
            String anchorKernel,
            int anchors,
            int allReduces,
            int mainKernels,
            int[] firstAnchorOfLayer) {
        this.profile = profile;
        this.layers = layers;
        this.kernels = kernels;
        this.prologueKernels = prologueKernels;
        this.epilogueKernels = epilogueKernels;
        this.layerTruths = layerTruths;
        this.anchorKernel = anchorKernel;
        this.anchors = anchors;
        this.allReduces = allReduces;
        this.mainKernels = mainKernels;
        this.firstAnchorOfLayer = firstAnchorOfLayer;
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
        int[] firstAnchor = new int[layers];
        for (int l = 0; l < layers; l++) {
            firstAnchor[l] = anchorAt[l * bpl];
        }
        return new PassTemplate(
                profile,
                layers,
                kernels,
                prologue,
                epilogue,
                List.copyOf(truths),
                anchorKernel,
                expected,
                allReduces,
                kernels.length,
                firstAnchor);
    }

    /**
     * This template plus a draft (MTP / nextn) layer after the last kernel: a copy of the last model layer's
     * kernels (anchors included), numbered as layer {@code layers}. Passes run it only where {@link
     * SynthEdits#draftIn} says so; truth, names and counts stay those of the main sequence.
     */
    PassTemplate withDraftLayer() {
        List<KernelSpec> all = new ArrayList<>(List.of(kernels));
        int added = 0;
        for (int i = 0; i < mainKernels; i++) {
            KernelSpec k = kernels[i];
            if (k.section() == KernelSpec.Section.LAYER && k.layer() == layers - 1) {
                if (added == 0 && k.op() == null) {
                    throw new IllegalStateException("the last layer's first kernel has no cpu_op of its own");
                }
                all.add(new KernelSpec(
                        k.name(),
                        k.meanUs(),
                        k.comm(),
                        k.api(),
                        k.op(),
                        k.section(),
                        layers,
                        k.anchor(),
                        k.geometry()));
                added++;
            }
        }
        return new PassTemplate(
                profile,
                layers,
                all.toArray(KernelSpec[]::new),
                prologueKernels,
                epilogueKernels,
                layerTruths,
                anchorKernel,
                anchors,
                allReduces,
                mainKernels,
                firstAnchorOfLayer);
    }

    /** Kernels pass {@code pass} runs (the draft layer's included). */
    int kernelsIn(SynthEdits edits, int pass) {
        return edits.draftIn(pass) ? kernels.length : mainKernels;
    }

    /** Whether kernel {@code i} of pass {@code pass} is written (lost anchor, trace starting inside pass 0). */
    boolean written(SynthEdits edits, int pass, int i) {
        if (pass == 0 && i < edits.startInsideKernels()) {
            return false;
        }
        return !(pass == edits.missingAnchorPass() && i == missingAnchorKernel(edits));
    }

    int missingAnchorKernel(SynthEdits edits) {
        int layer = edits.missingAnchorLayer() < 0 ? layers / 2 : Math.min(edits.missingAnchorLayer(), layers - 1);
        return firstAnchorOfLayer[layer];
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
        List<String> names = new ArrayList<>(mainKernels);
        for (int i = 0; i < mainKernels; i++) {
            names.add(kernels[i].name());
        }
        return names;
    }
}
