/**
 * Nsight Systems SQLite exports ({@code nsys export --type sqlite}): the reader, and a writer with a TRT-LLM
 * scenario generator and named test fixtures with known answers.
 */
package io.llmprof.agent.nsys;
