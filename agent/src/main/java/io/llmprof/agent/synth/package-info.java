/**
 * `llmprof synth`: streams realistic Kineto Chrome traces of an LLM decode loop, built from a model config.json,
 * with exact ground truth (passes, layers, kernels per layer) for tests, the demo and load generation.
 */
package io.llmprof.agent.synth;
