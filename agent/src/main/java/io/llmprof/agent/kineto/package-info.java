/** Streaming reader of PyTorch-profiler (Kineto) Chrome traces: exact ns times, rank identity, bad input as values. */
package io.llmprof.agent.kineto;
