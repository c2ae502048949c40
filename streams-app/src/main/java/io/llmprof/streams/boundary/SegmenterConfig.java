package io.llmprof.streams.boundary;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.llmprof.streams.category.Categorizer;
import io.llmprof.streams.category.CategoryRule;
import io.llmprof.streams.category.DisplayNames;
import io.llmprof.streams.profile.AnchorRole;
import io.llmprof.streams.profile.LayerTyping;
import io.llmprof.streams.profile.ModelConfig;
import io.llmprof.streams.profile.Profile;
import io.llmprof.streams.profile.ProfileCatalog;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * Everything the state machine needs to know about the model: profile (anchor, blocks per layer, role,
 * categories), number of layers (null = detect), layer typing, resync and steady-state parameters.
 * Build it with {@link #resolve}; the {@code with*} methods derive variants (tests, tuning).
 *
 * @param profileName profile the rest came from
 * @param anchor anchor regex (found in the canonical kernel name); null = auto-detect on a warm-up window
 * @param categories ordered category rules, profile rules first, then universal ones
 * @param allreducePattern case-insensitive regex counting all-reduce kernels (AR#), whatever their category
 * @param numLayers layer count; null = detect from the trace
 * @param layerTypes types of layers 0..numLayers-1 from config.json; empty = FIRST / FINAL / LAYER
 * @param resyncFactor resync threshold = max(resyncFloorNs, resyncFactor x median idle gap inside passes)
 * @param steadyTolerance relative wall-time tolerance against the median of the previous steadyWindow passes
 * @param warmupKernels events buffered for anchor / layer-count detection (bounds state size)
 * @param maxPassKernels events one open pass may hold before it is closed by force (bounds state size)
 * @param notices what resolution decided that a person should know (profile choice, truncations)
 * @param compressRatios config.json compress_ratios truncated to numLayers (the c_r column); empty without
 * @param displayNames ordered display-name rules: a kernel's family is its simplified name; null = the built-in ones
 * @param topFamilies kernel families listed per layer before one "other" row (0 = the default, 16)
 * @param launchContextCategories ordered rules on launch-context op names; null = the built-in ones
 * @param communicationCategories the categories that are communication; null = the built-in ones
 */
public record SegmenterConfig(
        @JsonProperty("profile") String profileName,
        @JsonProperty("anchor") String anchor,
        @JsonProperty("blocks_per_layer") int blocksPerLayer,
        @JsonProperty("role") AnchorRole role,
        @JsonProperty("half_labels") List<String> halfLabels,
        @JsonProperty("categories") List<CategoryRule> categories,
        @JsonProperty("allreduce_pattern") String allreducePattern,
        @JsonProperty("num_layers") Integer numLayers,
        @JsonProperty("layer_types") List<String> layerTypes,
        @JsonProperty("resync_factor") double resyncFactor,
        @JsonProperty("resync_floor_ns") long resyncFloorNs,
        @JsonProperty("steady_tolerance") double steadyTolerance,
        @JsonProperty("steady_window") int steadyWindow,
        @JsonProperty("warmup_kernels") int warmupKernels,
        @JsonProperty("max_pass_kernels") int maxPassKernels,
        @JsonProperty("notices") List<String> notices,
        @JsonProperty("compress_ratios") List<Integer> compressRatios,
        @JsonProperty("display_names") List<DisplayNames.Rule> displayNames,
        @JsonProperty("top_families") int topFamilies,
        @JsonProperty("launch_context_categories") List<CategoryRule> launchContextCategories,
        @JsonProperty("communication_categories") List<String> communicationCategories) {

    public static final double DEFAULT_RESYNC_FACTOR = 20.0;
    public static final long DEFAULT_RESYNC_FLOOR_NS = 100_000;
    public static final double DEFAULT_STEADY_TOLERANCE = 0.05;
    public static final int DEFAULT_STEADY_WINDOW = 3;
    public static final int DEFAULT_WARMUP_KERNELS = 8192;
    public static final int DEFAULT_MAX_PASS_KERNELS = 65_536;
    public static final int DEFAULT_TOP_FAMILIES = 16;

    public SegmenterConfig {
        Objects.requireNonNull(profileName, "profileName");
        role = role == null ? AnchorRole.OPENS : role;
        if (blocksPerLayer < 1) {
            throw new IllegalArgumentException("blocks per layer must be >= 1, not " + blocksPerLayer);
        }
        halfLabels = halfLabels == null ? List.of() : List.copyOf(halfLabels);
        categories = categories == null ? List.of() : List.copyOf(categories);
        Objects.requireNonNull(allreducePattern, "allreducePattern");
        if (numLayers != null && numLayers < 1) {
            throw new IllegalArgumentException("number of layers must be >= 1, not " + numLayers);
        }
        layerTypes = layerTypes == null ? List.of() : List.copyOf(layerTypes);
        notices = notices == null ? List.of() : List.copyOf(notices);
        compressRatios = compressRatios == null ? List.of() : List.copyOf(compressRatios);
        displayNames =
                displayNames == null ? ProfileCatalog.builtIn().displayNames().rules() : List.copyOf(displayNames);
        topFamilies = topFamilies == 0 ? DEFAULT_TOP_FAMILIES : topFamilies;
        launchContextCategories = launchContextCategories == null
                ? ProfileCatalog.builtIn().launchContextCategories()
                : List.copyOf(launchContextCategories);
        communicationCategories = communicationCategories == null
                ? ProfileCatalog.builtIn().communicationCategories()
                : List.copyOf(communicationCategories);
        if (topFamilies < 1) {
            throw new IllegalArgumentException("top families must be >= 1, not " + topFamilies);
        }
        if (anchor != null) {
            try {
                Pattern.compile(anchor);
            } catch (PatternSyntaxException e) {
                throw new IllegalArgumentException(
                        "anchor kernel regex " + anchor + " does not compile: " + e.getDescription(), e);
            }
        }
        if (resyncFactor <= 0 || resyncFloorNs < 0 || steadyTolerance < 0 || steadyWindow < 1) {
            throw new IllegalArgumentException("resync/steady parameters out of range");
        }
        if (warmupKernels < 16 || maxPassKernels < 16) {
            throw new IllegalArgumentException("warmupKernels and maxPassKernels must be >= 16");
        }
    }

    /**
     * @param modelConfig config.json of the model, or null
     * @param profile profile name (dsv4_csa_hca, dsv3_mla, generic, or a user profile), or null to infer from the config
     * @param anchorKernel anchor regex overriding the profile's, or null
     * @param numLayers layer count overriding config and detection, or null
     */
    public static SegmenterConfig resolve(Path modelConfig, String profile, String anchorKernel, Integer numLayers) {
        return resolve(modelConfig, profile, anchorKernel, numLayers, ProfileCatalog.builtIn());
    }

    /** As {@link #resolve(Path, String, String, Integer)}, with user profiles ({@code --profiles FILE}). */
    public static SegmenterConfig resolve(
            Path modelConfig, String profile, String anchorKernel, Integer numLayers, ProfileCatalog catalog) {
        ModelConfig cfg = modelConfig == null ? null : ModelConfig.read(modelConfig);
        List<String> notices = new ArrayList<>();
        Profile p;
        if (profile != null && !profile.isBlank()) {
            p = catalog.require(profile.strip());
        } else {
            p = catalog.select(cfg == null ? null : cfg.json());
            if (cfg != null) {
                notices.add("profile " + p.name() + " chosen from " + modelConfig.getFileName()
                        + (p.selectWhen().key() == null
                                ? ""
                                : " (" + p.selectWhen().key() + " "
                                        + p.selectWhen().test() + ")"));
            }
        }
        String anchor = anchorKernel != null && !anchorKernel.isBlank() ? anchorKernel : p.anchor();
        Integer n = numLayers != null ? numLayers : cfg == null ? null : cfg.numHiddenLayers();
        if (numLayers != null
                && cfg != null
                && cfg.numHiddenLayers() != null
                && !numLayers.equals(cfg.numHiddenLayers())) {
            notices.add("--num-layers " + numLayers + " overrides num_hidden_layers " + cfg.numHiddenLayers());
        }
        List<String> types = List.of();
        List<Integer> ratios = List.of();
        if (n != null && n >= 1 && cfg != null) {
            LayerTyping.Typing t = LayerTyping.of(cfg, n);
            types = t.types();
            ratios = t.compressRatios();
            notices.addAll(t.notices());
        }
        List<CategoryRule> rules = new ArrayList<>(p.categories());
        rules.addAll(catalog.universalCategories());
        return new SegmenterConfig(
                p.name(),
                anchor,
                p.blocksPerLayer(),
                p.role(),
                p.halfLabels(),
                rules,
                catalog.allreducePattern(),
                n,
                types,
                DEFAULT_RESYNC_FACTOR,
                DEFAULT_RESYNC_FLOOR_NS,
                DEFAULT_STEADY_TOLERANCE,
                DEFAULT_STEADY_WINDOW,
                DEFAULT_WARMUP_KERNELS,
                DEFAULT_MAX_PASS_KERNELS,
                notices,
                ratios,
                catalog.displayNames().rules(),
                DEFAULT_TOP_FAMILIES,
                catalog.launchContextCategories(),
                catalog.communicationCategories());
    }

    /** The categorizer of these rules (name rules, launch-context rules, communication categories). */
    public Categorizer categorizer() {
        return new Categorizer(categories, allreducePattern, launchContextCategories, communicationCategories);
    }

    /** Type of layer {@code layer} of a pass with {@code n} layers. */
    public String layerType(int layer, int n) {
        if (layerTypes.size() == n && layer < n) {
            return layerTypes.get(layer);
        }
        return layer == 0 ? LayerTyping.FIRST : layer == n - 1 ? LayerTyping.FINAL : LayerTyping.LAYER;
    }

    /** config.json compress_ratios[layer] (the c_r column) of a pass with {@code n} layers, null when absent. */
    public Integer compressRatio(int layer, int n) {
        return layerTypes.size() == n && layer < compressRatios.size() ? compressRatios.get(layer) : null;
    }

    public SegmenterConfig withAnchor(String regex) {
        return copy(c -> c.anchor = regex);
    }

    public SegmenterConfig withNumLayers(Integer n) {
        return copy(c -> c.numLayers = n);
    }

    public SegmenterConfig withResync(double factor, long floorNs) {
        return copy(c -> {
            c.resyncFactor = factor;
            c.resyncFloorNs = floorNs;
        });
    }

    public SegmenterConfig withLimits(int warmup, int maxPass) {
        return copy(c -> {
            c.warmupKernels = warmup;
            c.maxPassKernels = maxPass;
        });
    }

    public SegmenterConfig withTopFamilies(int n) {
        return copy(c -> c.topFamilies = n);
    }

    /** This config with the changes {@code edit} makes; the canonical constructor validates the result. */
    private SegmenterConfig copy(java.util.function.Consumer<Copy> edit) {
        Copy c = new Copy(this);
        edit.accept(c);
        return c.build();
    }

    /** The components of a config being derived: one list of them for every {@code with*} method. */
    private static final class Copy {
        final SegmenterConfig from;
        String anchor;
        Integer numLayers;
        double resyncFactor;
        long resyncFloorNs;
        int warmupKernels;
        int maxPassKernels;
        int topFamilies;

        Copy(SegmenterConfig from) {
            this.from = from;
            anchor = from.anchor;
            numLayers = from.numLayers;
            resyncFactor = from.resyncFactor;
            resyncFloorNs = from.resyncFloorNs;
            warmupKernels = from.warmupKernels;
            maxPassKernels = from.maxPassKernels;
            topFamilies = from.topFamilies;
        }

        SegmenterConfig build() {
            return new SegmenterConfig(
                    from.profileName,
                    anchor,
                    from.blocksPerLayer,
                    from.role,
                    from.halfLabels,
                    from.categories,
                    from.allreducePattern,
                    numLayers,
                    from.layerTypes,
                    resyncFactor,
                    resyncFloorNs,
                    from.steadyTolerance,
                    from.steadyWindow,
                    warmupKernels,
                    maxPassKernels,
                    from.notices,
                    from.compressRatios,
                    from.displayNames,
                    topFamilies,
                    from.launchContextCategories,
                    from.communicationCategories);
        }
    }
}
