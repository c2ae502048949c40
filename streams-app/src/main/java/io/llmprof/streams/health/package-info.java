/** Whether the streams app is healthy: Kafka Streams' state, stream-thread deaths and endless rebalances. */
package io.llmprof.streams.health;
