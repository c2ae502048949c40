package io.llmprof.streams.service;

import io.llmprof.streams.service.ServiceState.Req;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A {@link RequestTable} kept in two stores, one record per entity, for the live processor: no record grows with
 * the number of open requests (issue 15: 181k open requests in one value made a 16.8 MB changelog record).
 *
 * <ul>
 *   <li>{@code requests}: key {@code <instance> NUL 'r' <id>} holds one open request ({@code ServiceRequest});
 *       key {@code <instance> NUL 'a' <linked id>} the primary id it routes to (UTF-8).
 *   <li>{@code order}: key {@code <instance> NUL <seq as 16 hex digits>} holds the id of the request last added or
 *       touched at sequence number {@code seq}. Every add and touch takes the next number, so ascending keys are
 *       exactly the oldest-first order of {@link MemoryRequestTable}'s access-ordered map. {@link #oldest()} is the
 *       first key at or above {@code floor}, a bound below which every key is gone (a range scan never walks the
 *       deleted keys of the instance's past: a queue of deletes in RocksDB would otherwise slow every scan); keys
 *       are read {@value #SCAN} at a time. Memory: those keys, whatever the number of open requests.
 * </ul>
 *
 * <p>Within a batch, the requests and linked ids read or changed are held in memory; {@link #prepare} encodes them
 * and {@link #flush} writes what changed (a request touched ten times is written once) and forgets them. Nothing is
 * written before {@link #flush}: a batch that fails leaves the stores as they were, and the processor drops this
 * table and reads its counters ({@link Meta}, stored in the instance's head record) back. Memory: the requests the
 * batch named or timed out, never all open requests. A stored request that cannot be decoded is taken as absent
 * (and deleted at the flush), counted in {@link #dropped()}.
 */
public final class StoredRequestTable implements RequestTable {
    /** The counters stored with the instance's head: next sequence number, scan floor, open requests, linked ids. */
    public record Meta(long nextSeq, long floor, int open, int aliases) {
        public static final Meta EMPTY = new Meta(0, 0, 0, 0);

        public Meta {
            if (nextSeq < 0 || floor < 0 || floor > nextSeq || open < 0 || aliases < 0) {
                throw new IllegalArgumentException("request table meta: seq " + nextSeq + ", floor " + floor + ", "
                        + open + " open, " + aliases + " aliases");
            }
        }
    }

    private static final String MAX_SEQ = "ffffffffffffffff";
    /** Order keys read per scan. */
    static final int SCAN = 64;

    private final String prefix;
    private final ByteStore requests;
    private final ByteStore order;
    private long nextSeq;
    private long floor;
    private int open;
    private int aliases;
    private long dropped;

    /** A request read or changed in this batch. */
    private static final class Slot {
        /** The open request, null when not open (never stored, or removed in this batch). */
        Req req;
        /** Its record exists in the store (to delete if it was removed). */
        boolean inStore;
        /** The order key it is stored under, -1 when none. */
        long storedSeq = -1;
        /** Its stored value while it is open (to skip writing an unchanged one). */
        byte[] stored;
        /** Its value as {@link #prepare} encoded it. */
        byte[] encoded;
    }

    private final HashMap<String, Slot> slots = new HashMap<>();
    /**
     * Requests added or touched in this batch, in the order of their new sequence numbers (all above every stored
     * one): a touch moves a request to the end, as sequence numbers only grow. Access-ordered, so that a {@code put}
     * of a request already there moves its entry instead of making a new one (nothing here calls {@code get}, which
     * would move one too).
     */
    private final LinkedHashMap<String, Req> young = new LinkedHashMap<>(16, 0.75f, true);
    /** Linked ids read or changed in this batch: their primary id, or null when none. */
    private final HashMap<String, String> links = new HashMap<>();

    private final HashSet<String> changedLinks = new HashSet<>();
    /** Order keys found pointing at a request that is not stored under them (deleted at the flush). */
    private final List<Long> orphanSeqs = new ArrayList<>();
    /** The oldest stored request found, valid while its slot still holds that sequence number. */
    private String oldestId;

    private long oldestSeq = -1;
    /** Stored order keys read ahead (at or above the floor), as the store held them at the batch's start. */
    private final ArrayDeque<Map.Entry<String, byte[]>> ahead = new ArrayDeque<>();
    /** The last scan reached the end of the instance's order keys. */
    private boolean scannedToEnd;

    /**
     * @param instanceKey {@code <job>/<instance>}; must not hold NUL (the key separator)
     */
    public StoredRequestTable(String instanceKey, ByteStore requests, ByteStore order, Meta meta) {
        if (instanceKey.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("an instance key must not hold NUL: " + instanceKey.replace('\0', '?'));
        }
        this.prefix = instanceKey + '\0';
        this.requests = requests;
        this.order = order;
        this.nextSeq = meta.nextSeq();
        this.floor = meta.floor();
        this.open = meta.open();
        this.aliases = meta.aliases();
    }

    /** The counters to store with the instance's head (after {@link #flush}). */
    public Meta meta() {
        return new Meta(nextSeq, floor, open, aliases);
    }

    /** Stored requests found undecodable (taken as absent) since this table was made. */
    public long dropped() {
        return dropped;
    }

    /** Deletes every request, linked id and order key of an instance (its state is dropped or reset). */
    public static int purge(String instanceKey, ByteStore requests, ByteStore order) {
        String from = instanceKey + '\0';
        String to = instanceKey + '\u0001';
        return requests.deleteRange(from, to) + order.deleteRange(from, to);
    }

    /** Key of a chunk of the instance's analyzer head in the requests store. */
    public static String headChunkKey(String instanceKey, int chunk) {
        return instanceKey + '\0' + 'h' + chunk;
    }

    private String requestKey(String id) {
        return prefix + 'r' + id;
    }

    private String linkKey(String linkedId) {
        return prefix + 'a' + linkedId;
    }

    private String orderKey(long seq) {
        String hex = Long.toHexString(seq);
        return prefix + "0000000000000000".substring(hex.length()) + hex;
    }

    private Slot slot(String id) {
        Slot s = slots.get(id);
        if (s != null) {
            return s;
        }
        s = new Slot();
        byte[] bytes = requests.get(requestKey(id));
        if (bytes != null) {
            s.inStore = true;
            try {
                Req r = ServiceStateCodec.decodeRequest(bytes);
                s.req = r;
                s.storedSeq = r.seq;
                s.stored = bytes;
            } catch (IllegalArgumentException e) {
                dropped++; // deleted at the flush; its order key, if any, is skipped and deleted by oldest()
                open = Math.max(0, open - 1);
            }
        }
        slots.put(id, s);
        return s;
    }

    @Override
    public Req get(String id) {
        return slot(id).req;
    }

    @Override
    public void add(Req r) {
        Slot s = slot(r.id);
        if (s.req != null) {
            remove(s.req);
        }
        s.req = r;
        r.seq = nextSeq++;
        young.put(r.id, r);
        open++;
    }

    @Override
    public void touch(Req r) {
        // as the map's remove + put: a request not open (any more) is put back
        Slot s = slot(r.id);
        if (s.req == null) {
            open++;
        }
        s.req = r;
        r.seq = nextSeq++;
        young.put(r.id, r); // to the end, where it was or not
    }

    @Override
    public void remove(Req r) {
        Slot s = slot(r.id);
        if (s.req == null) {
            return;
        }
        young.remove(r.id);
        s.req = null;
        s.stored = null;
        s.encoded = null;
        open--;
    }

    @Override
    public Req oldest() {
        if (oldestId != null) {
            Slot s = slots.get(oldestId);
            if (s != null && s.req != null && s.req.seq == oldestSeq) {
                return s.req;
            }
            oldestId = null;
        }
        // Nothing is written to the stores during a batch, so the keys read ahead stay exactly what is stored.
        while (true) {
            if (ahead.isEmpty()) {
                if (scannedToEnd) {
                    break;
                }
                List<Map.Entry<String, byte[]>> read = order.scan(orderKey(floor), prefix + MAX_SEQ, SCAN);
                scannedToEnd = read.size() < SCAN;
                ahead.addAll(read);
                if (ahead.isEmpty()) {
                    break;
                }
            }
            Map.Entry<String, byte[]> e = ahead.peekFirst();
            long seq = Long.parseUnsignedLong(e.getKey().substring(prefix.length()), 16);
            Slot s = slot(new String(e.getValue(), StandardCharsets.UTF_8));
            if (s.req != null && s.req.seq == seq) {
                floor = seq;
                oldestId = s.req.id;
                oldestSeq = seq;
                return s.req;
            }
            ahead.pollFirst();
            if (s.storedSeq != seq) {
                orphanSeqs.add(seq);
            } // else: touched or removed in this batch; the flush deletes its old key
            floor = seq + 1;
        }
        return young.isEmpty() ? null : young.values().iterator().next();
    }

    @Override
    public int size() {
        return open;
    }

    @Override
    public String primary(String linkedId) {
        if (links.containsKey(linkedId)) {
            return links.get(linkedId);
        }
        if (aliases == 0) {
            return null; // none stored and none added: no read needed (the common case)
        }
        byte[] bytes = requests.get(linkKey(linkedId));
        String p = bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
        links.put(linkedId, p);
        return p;
    }

    @Override
    public void link(String linkedId, String primaryId) {
        if (primary(linkedId) == null) {
            aliases++;
        }
        links.put(linkedId, primaryId);
        changedLinks.add(linkedId);
    }

    @Override
    public void unlink(String linkedId) {
        if (primary(linkedId) != null) {
            aliases--;
            links.put(linkedId, null);
            changedLinks.add(linkedId);
        }
    }

    /**
     * Encodes the requests this batch read or changed; returns the ids of those whose record (key and value) would
     * be over {@code maxBytes} (the caller evicts them before {@link #flush}).
     */
    public List<String> prepare(int maxBytes) {
        List<String> over = new ArrayList<>();
        for (Map.Entry<String, Slot> e : slots.entrySet()) {
            Slot s = e.getValue();
            if (s.req != null) {
                s.encoded = ServiceStateCodec.encodeRequest(s.req);
                String key = requestKey(e.getKey());
                if (s.encoded.length + 3L * key.length() > maxBytes
                        && s.encoded.length + key.getBytes(StandardCharsets.UTF_8).length > maxBytes) {
                    over.add(e.getKey());
                }
            }
        }
        return over;
    }

    /** Writes what this batch changed and forgets the batch. */
    public void flush() {
        for (Map.Entry<String, Slot> e : slots.entrySet()) {
            String id = e.getKey();
            Slot s = e.getValue();
            if (s.req == null) {
                if (s.inStore) {
                    requests.delete(requestKey(id));
                }
                if (s.storedSeq >= 0) {
                    order.delete(orderKey(s.storedSeq));
                }
                continue;
            }
            byte[] value = s.encoded != null ? s.encoded : ServiceStateCodec.encodeRequest(s.req);
            if (!s.inStore || !Arrays.equals(value, s.stored)) {
                requests.put(requestKey(id), value);
            }
            if (s.req.seq != s.storedSeq) {
                if (s.storedSeq >= 0) {
                    order.delete(orderKey(s.storedSeq));
                }
                order.put(orderKey(s.req.seq), id.getBytes(StandardCharsets.UTF_8));
            }
        }
        for (String l : changedLinks) {
            String p = links.get(l);
            if (p == null) {
                requests.delete(linkKey(l));
            } else {
                requests.put(linkKey(l), p.getBytes(StandardCharsets.UTF_8));
            }
        }
        for (long seq : orphanSeqs) {
            order.delete(orderKey(seq));
        }
        slots.clear();
        young.clear();
        links.clear();
        changedLinks.clear();
        orphanSeqs.clear();
        oldestId = null;
        oldestSeq = -1;
        ahead.clear();
        scannedToEnd = false;
    }
}
