/** The Kafka Streams topology (a static factory tests drive), its configuration and the running app handle. */
package io.llmprof.streams.topology;
