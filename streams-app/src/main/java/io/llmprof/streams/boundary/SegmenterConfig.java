package io.llmprof.streams.boundary;

import java.nio.file.Path;

/**
 * Everything the state machine needs to know about the model: profile (anchor, blocks per layer, role,
 * categories), number of layers (null = detect), layer typing, resync parameters.
 *
 * <p>API CONTRACT (stub): {@link #resolve} builds it from CLI/streams options exactly as `analyze layers`
 * takes them. The analysis-core work fills in the fields.
 */
public record SegmenterConfig(String profileName) {

    /**
     * @param modelConfig config.json of the model, or null
     * @param profile profile name (dsv4_csa_hca, dsv3_mla, generic), or null to infer from the config
     * @param anchorKernel anchor regex overriding the profile's, or null
     * @param numLayers layer count overriding config and detection, or null
     */
    public static SegmenterConfig resolve(Path modelConfig, String profile, String anchorKernel, Integer numLayers) {
        throw new UnsupportedOperationException("not implemented yet");
    }
}
