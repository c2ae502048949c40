/** The per-rank anchor-boundary state machine: plain Java, no Kafka imports, shared by streams app and CLI. */
package io.llmprof.streams.boundary;
