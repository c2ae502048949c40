package io.llmprof.events.metrics;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * Keeps a metric tag's cardinality bounded: at most {@code limit} distinct values pass through, later ones become
 * {@link #OTHER}. A scrape with one series per value stays small whatever the input. Shared by the streams app's and
 * the dashboard's meters.
 *
 * <p>Without recycling, the first {@code limit} values are admitted for good. With it ({@link #recycling}), a value
 * not seen for {@code idleAfter} gives its place to the next new value once the limit is reached: the owner is told
 * ({@code retired}) and removes the series that carry it. So a monitor that runs for weeks gives each new job its own
 * series as old jobs go quiet, while values in use are never pushed out (a busy set larger than the limit still
 * shares {@code other}, with no series coming and going).
 */
public final class BoundedTagValues {
    public static final String OTHER = "other";
    public static final String UNKNOWN = "unknown";

    /** How long a value must have gone unused before a new one may take its place, where recycling is on. */
    public static final Duration DEFAULT_IDLE = Duration.ofMinutes(10);

    private static final VarHandle USES;

    static {
        try {
            USES = MethodHandles.lookup().findVarHandle(Slot.class, "uses", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final int limit;
    /** 0: admitted for good. */
    private final long idleNanos;

    private final LongSupplier clock;
    private final Consumer<String> retired;
    private final Map<String, Slot> admitted = new ConcurrentHashMap<>();
    /** No value can be idle long enough before this ({@link #clock} time); guarded by this. */
    private long noneIdleBefore;

    private boolean scanned;

    public BoundedTagValues(int limit) {
        this(limit, Duration.ZERO, System::nanoTime, v -> {});
    }

    private BoundedTagValues(int limit, Duration idleAfter, LongSupplier clock, Consumer<String> retired) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be >= 1, got " + limit);
        }
        if (idleAfter.isNegative()) {
            throw new IllegalArgumentException("idleAfter must not be negative, got " + idleAfter);
        }
        this.limit = limit;
        this.idleNanos = idleAfter.toNanos();
        this.clock = Objects.requireNonNull(clock, "clock");
        this.retired = Objects.requireNonNull(retired, "retired");
    }

    /**
     * Admits values as {@link #BoundedTagValues(int)} does, and when full lets the least recently used value that
     * has gone unused for {@code idleAfter} make room: {@code retired} is called with it (under this object's lock,
     * before the new value is admitted), and must remove the series that carry it.
     *
     * @param clock nanoseconds, {@link System#nanoTime()} outside tests
     */
    public static BoundedTagValues recycling(
            int limit, Duration idleAfter, LongSupplier clock, Consumer<String> retired) {
        if (idleAfter.isZero()) {
            throw new IllegalArgumentException("idleAfter must be positive to recycle");
        }
        return new BoundedTagValues(limit, idleAfter, clock, retired);
    }

    /**
     * An admitted value; {@link #touch()} marks it used without another lookup. A touch only counts (no clock read,
     * no fence: it is on the feed's per-record path); the rare scan for an idle value turns "used since the last
     * scan" into "last used at this scan", so a value is idle for at least as long as it is said to be.
     */
    public final class Slot {
        private final String value;
        /** Clock time of the scan that last saw this value used (or of its admission); guarded by the bound. */
        private long lastUse;
        /** Uses so far (wraps), written with opaque access by {@link #touch()}. */
        private int uses;
        /** {@link #uses} at the last scan; guarded by the bound. */
        private int usesSeen;

        private Slot(String value, long now) {
            this.value = value;
            this.lastUse = now;
        }

        public String value() {
            return value;
        }

        /** Used now: not idle. */
        public void touch() {
            USES.setOpaque(this, (int) USES.getOpaque(this) + 1);
        }

        /** Whether this slot still holds its value (false once retired). */
        public boolean admitted() {
            return admitted.get(value) == this;
        }
    }

    /** The value itself while admitted, {@link #OTHER} beyond the limit, {@link #UNKNOWN} for null or blank. */
    public String admit(String value) {
        if (value == null || value.isBlank()) {
            return UNKNOWN;
        }
        return slot(value) == null ? OTHER : value;
    }

    /** The value's slot, admitting it (and marking it used) while there is room; null beyond the limit or blank. */
    public Slot slot(String value) {
        if (value == null || value.isBlank()) {
            return null;
        }
        Slot s = admitted.get(value);
        if (s != null) {
            s.touch();
            return s;
        }
        synchronized (this) {
            s = admitted.get(value);
            if (s != null) {
                s.touch();
                return s;
            }
            long now = idleNanos == 0 ? 0 : clock.getAsLong();
            if (admitted.size() >= limit && !retireOneIdle(now)) {
                return null;
            }
            s = new Slot(value, now);
            admitted.put(value, s);
            return s;
        }
    }

    /** Gives the value's place back at once (its owner removed its series), without telling the owner. */
    public void release(String value) {
        if (value != null) {
            admitted.remove(value);
        }
    }

    /** Values admitted now. */
    public int size() {
        return admitted.size();
    }

    /** Retires the least recently used value if it has been idle long enough; guarded by this. */
    private boolean retireOneIdle(long now) {
        if (idleNanos == 0 || (scanned && now - noneIdleBefore < 0)) {
            return false;
        }
        Slot oldest = null;
        for (Slot s : admitted.values()) {
            int uses = (int) USES.getOpaque(s);
            if (uses != s.usesSeen) {
                s.usesSeen = uses;
                s.lastUse = now;
            }
            if (oldest == null || s.lastUse - oldest.lastUse < 0) {
                oldest = s;
            }
        }
        if (oldest == null) {
            return false;
        }
        if (now - oldest.lastUse < idleNanos) {
            // nothing can be idle long enough before the oldest is: no scan per new value until then
            scanned = true;
            noneIdleBefore = oldest.lastUse + idleNanos;
            return false;
        }
        admitted.remove(oldest.value);
        scanned = false;
        retired.accept(oldest.value);
        return true;
    }
}
