package io.llmprof.streams.service;

import java.util.List;
import java.util.Map;

/**
 * The key-value operations a {@link StoredRequestTable} needs, over byte values and string keys ordered by their
 * UTF-8 bytes. The live processor adapts a Kafka Streams store to it; the analysis core has no Kafka imports.
 */
public interface ByteStore {
    /** The value of a key, or null. */
    byte[] get(String key);

    void put(String key, byte[] value);

    void delete(String key);

    /** The first {@code max} entries (or fewer) with keys in {@code [from, to]} (both inclusive), in key order. */
    List<Map.Entry<String, byte[]>> scan(String from, String to, int max);

    /** Deletes every key in {@code [from, to]} (both inclusive); returns how many. */
    int deleteRange(String from, String to);
}
