package io.llmprof.agent.sequence;

import io.llmprof.events.TraceEvent;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Bytes of events set aside that may stay in memory instead of going to a spool file, shared by everything that holds
 * it: by default every lane interleaver and every sorted lane of the JVM ({@link #JVM}), so that readers of many
 * files at once hold no more than one. What does not fit goes to disk; memory stays bounded whatever the files.
 */
public final class MemoryBudget {
    /** The JVM-wide default's floor: 48 MiB of estimated events, about 300,000 host events of a Kineto trace. */
    public static final long DEFAULT_BYTES = 48L << 20;

    /** The JVM-wide default's ceiling: 256 MiB, about 1.7 M events. */
    public static final long MAX_DEFAULT_BYTES = 256L << 20;

    /**
     * The JVM-wide default for a heap of {@code maxHeap} bytes: an eighth of it, at least {@link #DEFAULT_BYTES} and at
     * most {@link #MAX_DEFAULT_BYTES} (48 MiB under `analyze`'s 256 MB heap, 256 MiB under the agent's 2 GB).
     */
    static long defaultFor(long maxHeap) {
        return Math.max(DEFAULT_BYTES, Math.min(MAX_DEFAULT_BYTES, maxHeap / 8));
    }

    /** The budget every interleaver and sorted lane shares unless given another. */
    public static final MemoryBudget JVM =
            new MemoryBudget(defaultFor(Runtime.getRuntime().maxMemory()));

    /** Estimated heap per held event besides its name and dims (the event, its boxed fields, list slots). */
    public static final int EVENT_BYTES = 128;

    private final long limit;
    private final AtomicLong used = new AtomicLong();

    /** @param limit bytes; 0 sends everything to disk */
    public MemoryBudget(long limit) {
        this.limit = limit;
    }

    /** Takes {@code bytes} if they fit; false (and nothing taken) if not. */
    public boolean tryReserve(long bytes) {
        while (true) {
            long u = used.get();
            if (u + bytes > limit) {
                return false;
            }
            if (used.compareAndSet(u, u + bytes)) {
                return true;
            }
        }
    }

    public void release(long bytes) {
        used.addAndGet(-bytes);
    }

    /** Bytes reserved now. */
    public long used() {
        return used.get();
    }

    /** An event's estimated heap. */
    public static long bytes(TraceEvent event) {
        return EVENT_BYTES + chars(event);
    }

    /** The characters of an event's name and dims, the part of its heap that varies. */
    public static int chars(TraceEvent event) {
        return event.name().length()
                + (event.inputDims() == null ? 0 : event.inputDims().length());
    }

    /** Events' estimated heap. */
    public static long bytes(List<TraceEvent> events) {
        long n = 0;
        for (TraceEvent e : events) {
            n += bytes(e);
        }
        return n;
    }
}
