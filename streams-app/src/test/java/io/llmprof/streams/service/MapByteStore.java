package io.llmprof.streams.service;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** A {@link ByteStore} over a sorted map (keys ordered by their UTF-8 bytes, as RocksDB orders them). */
final class MapByteStore implements ByteStore {
    final TreeMap<String, byte[]> map = new TreeMap<>(
            (a, b) -> Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8)));
    int puts;
    int deletes;
    int largest;

    @Override
    public byte[] get(String key) {
        return map.get(key);
    }

    @Override
    public void put(String key, byte[] value) {
        puts++;
        largest = Math.max(largest, value.length);
        map.put(key, value);
    }

    @Override
    public void delete(String key) {
        deletes++;
        map.remove(key);
    }

    int scans;

    @Override
    public List<Map.Entry<String, byte[]>> scan(String from, String to, int max) {
        scans++;
        List<Map.Entry<String, byte[]>> out = new ArrayList<>();
        for (Map.Entry<String, byte[]> e : map.subMap(from, true, to, true).entrySet()) {
            if (out.size() == max) {
                break;
            }
            out.add(Map.entry(e.getKey(), e.getValue()));
        }
        return out;
    }

    @Override
    public int deleteRange(String from, String to) {
        List<String> keys = new ArrayList<>(map.subMap(from, true, to, true).keySet());
        keys.forEach(this::delete);
        return keys.size();
    }
}
