/** {@code llmprof export}: msServiceProfiler's CSVs, profiler.db and EP/MoE charts from the service engine's records. */
package io.llmprof.streams.service.export;
