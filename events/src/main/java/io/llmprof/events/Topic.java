package io.llmprof.events;

import org.apache.kafka.common.serialization.Serde;

/** A topic with its serdes, defined once in {@link Topics}. */
public record Topic<K, V>(String name, Serde<K> keySerde, Serde<V> valueSerde) {}
