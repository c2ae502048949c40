package io.llmprof.streams.offline;

import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.profile.ProfileCatalog;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** The model options of every `analyze` command that segments a trace (layers, kernels, perfetto). */
public final class SegmenterOptions {
    @Option(
            names = "--config",
            paramLabel = "FILE",
            description = "Model config.json: profile, layer count and layer types.")
    Path config;

    @Option(
            names = "--profile",
            paramLabel = "NAME",
            description =
                    "Profile (dsv4_csa_hca, dsv3_mla, generic, or one from --profiles); default: inferred from --config, else generic.")
    String profile;

    @Option(
            names = "--anchor-kernel",
            paramLabel = "REGEX",
            description = "Anchor kernel regex on the canonical kernel name; default: the profile's, or auto-detected.")
    String anchorKernel;

    @Option(
            names = "--num-layers",
            paramLabel = "N",
            description = "Layer count; default: config num_hidden_layers, else detected.")
    Integer numLayers;

    @Option(
            names = "--profiles",
            paramLabel = "FILE",
            description = "Extra profiles file (or directory of *.json) extending or overriding the built-in ones.")
    Path profilesFile;

    public SegmenterOptions() {}

    /** @throws IllegalArgumentException with a message a person can act on */
    SegmenterConfig resolve() {
        return resolve(catalog());
    }

    /** The built-in profiles with the {@code --profiles} ones. @throws IllegalArgumentException as resolve */
    ProfileCatalog catalog() {
        try {
            return ProfileCatalog.withUserProfiles(profilesFile);
        } catch (IllegalStateException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }

    /** @throws IllegalArgumentException with a message a person can act on */
    SegmenterConfig resolve(ProfileCatalog catalog) {
        if (numLayers != null && numLayers < 1) {
            throw new IllegalArgumentException("--num-layers must be >= 1, not " + numLayers);
        }
        try {
            return SegmenterConfig.resolve(config, profile, anchorKernel, numLayers, catalog);
        } catch (IllegalStateException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }
}
