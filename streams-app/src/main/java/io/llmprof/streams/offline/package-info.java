/** Offline CLI: `llmprof analyze layers|kernels|perfetto` run the same PassSegmenter as the streams app over a trace file. */
package io.llmprof.streams.offline;
