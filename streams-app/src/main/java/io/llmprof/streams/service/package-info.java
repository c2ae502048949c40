/** Service-level profiling (ANALYSIS.md section 4): the per-instance engine shared by the live topology and export. */
package io.llmprof.streams.service;
