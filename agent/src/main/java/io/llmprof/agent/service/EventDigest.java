package io.llmprof.agent.service;

import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceEvent;
import java.util.Objects;

/**
 * A 64-bit digest of service events in the order they were read: a checkpoint keeps the digest of the events Kafka
 * acknowledged, and a resumed read checks that its first events give the same one before it numbers the rest. Built
 * only from hash codes the JDK specifies (strings, boxed numbers, maps as the sum of their entries), so that it is
 * the same in every JVM; a record's or an enum's own hash code is not.
 */
final class EventDigest {
    /** The digest of no events. */
    static final long EMPTY = 0x6c6c6d70726f6621L;

    private static final long NULL = 0x4e554c4cL;

    private EventDigest() {}

    /** The digest of the events digested into {@code digest}, then {@code e}. */
    static long add(long digest, ServiceEvent e) {
        long h = mix(digest, e.domain().hashCode());
        h = mix(h, e.name().hashCode());
        h = mix(h, e.startNs());
        h = mix(h, e.durNs() == null ? NULL : e.durNs());
        h = mix(h, e.pid() == null ? NULL : e.pid());
        h = mix(h, e.tid() == null ? NULL : e.tid().hashCode());
        h = mix(h, e.requests().size());
        for (RequestRef r : e.requests()) {
            h = mix(h, Objects.hashCode(r.rid()));
            h = mix(h, Objects.hashCode(r.rawRid()));
            h = mix(h, r.iter() == null ? NULL : r.iter());
            h = mix(h, Objects.hashCode(r.type()));
            h = mix(h, r.scheduledTokens() == null ? NULL : r.scheduledTokens());
        }
        h = mix(h, e.metrics().hashCode());
        h = mix(h, e.deltas().hashCode());
        return mix(h, e.labels().hashCode());
    }

    private static long mix(long h, long v) {
        return Long.rotateLeft(h ^ (v * 0x9E3779B97F4A7C15L), 31) * 0xBF58476D1CE4E5B9L;
    }
}
