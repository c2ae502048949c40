/**
 * Host-overhead records and the verdict rules of ANALYSIS.md section 3, shared by the streams app (which
 * computes them), the dashboard (which serves them) and the offline {@code analyze host} command: per-step
 * sums ({@link io.llmprof.events.host.HostSums}), the ratios M1..M5 ({@link io.llmprof.events.host.HostMetrics}),
 * the two verdicts ({@link io.llmprof.events.host.HostAssessment}) and the topic records {@link
 * io.llmprof.events.host.HostStep} and {@link io.llmprof.events.host.HostVerdict}.
 */
package io.llmprof.events.host;
