/**
 * Service-level (msServiceProfiler-style) event helpers shared by the agent's readers and the streams app
 * (ANALYSIS.md sections 1 and 4).
 */
package io.llmprof.events.service;
