package io.llmprof.streams.service;

import io.llmprof.streams.service.ServiceState.Req;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A {@link RequestTable} in memory, for the offline analysis ({@code llmprof export}): an access-ordered map of
 * the open requests and a map of the linked ids. Its size is bounded by {@link ServiceConfig#maxOpenRequests()}.
 */
final class MemoryRequestTable implements RequestTable {
    /** Open requests by primary id, in the order they were last touched (oldest first). */
    private final LinkedHashMap<String, Req> requests = new LinkedHashMap<>();

    private final Map<String, String> aliases = new HashMap<>();

    @Override
    public Req get(String id) {
        return requests.get(id);
    }

    @Override
    public void add(Req r) {
        requests.put(r.id, r);
    }

    @Override
    public void touch(Req r) {
        requests.remove(r.id);
        requests.put(r.id, r);
    }

    @Override
    public void remove(Req r) {
        requests.remove(r.id);
    }

    @Override
    public Req oldest() {
        return requests.isEmpty() ? null : requests.values().iterator().next();
    }

    @Override
    public int size() {
        return requests.size();
    }

    @Override
    public String primary(String linkedId) {
        return aliases.get(linkedId);
    }

    @Override
    public void link(String linkedId, String primaryId) {
        aliases.put(linkedId, primaryId);
    }

    @Override
    public void unlink(String linkedId) {
        aliases.remove(linkedId);
    }
}
