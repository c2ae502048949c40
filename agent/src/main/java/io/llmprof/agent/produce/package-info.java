/** Deterministic batching of ordered events into {@code TraceBatch} records and their Kafka producer. */
package io.llmprof.agent.produce;
