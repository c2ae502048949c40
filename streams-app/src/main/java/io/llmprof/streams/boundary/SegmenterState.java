package io.llmprof.streams.boundary;

/** Serializable state of a {@link PassSegmenter} (the analysis-core work defines its fields). */
public record SegmenterState(String job, String run, String rank) {}
