/** Offline CLI: `llmprof analyze layers` runs the same PassSegmenter as the streams app over a trace file. */
package io.llmprof.streams.offline;
