/** The cross-rank view of a job: passes of its ranks aligned by step or index, their wall skew and slowest rank. */
package io.llmprof.streams.crossrank;
