/**
 * Host-overhead engine (ANALYSIS.md section 3): per-rank step windows with M1..M5 sums, the rolling per-phase
 * verdicts and the kernel-level drill-down. Plain Java with no Kafka imports, shared by the streams processor
 * and the offline {@code analyze host} command.
 */
package io.llmprof.streams.host;
