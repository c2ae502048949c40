package io.llmprof.agent.kineto;

/**
 * The fields of one {@code traceEvents} entry as read, before any check: both token walks of {@link
 * KinetoReader} (the byte fast path and Jackson) fill one of these per entry, and the same code turns it into
 * an event, so they cannot disagree on what an entry means. Reused: no holder object per event.
 */
final class EventFields {
    static final int CAT_UNSEEN = 0;
    static final int CAT_OTHER = 1;
    static final int CAT_KERNEL = 2;
    static final int CAT_MEMCPY = 3;
    static final int CAT_MEMSET = 4;
    static final int CAT_RUNTIME = 5;
    static final int CAT_CPU_OP = 6;
    static final int CAT_USER_ANNOTATION = 7;
    static final int CAT_GPU_ANNOTATION = 8;

    /** A number that was absent (or null, or not an integer where one is needed). */
    static final long MISSING = Long.MIN_VALUE + 1;

    /** Offset of the entry's '{' in the decompressed stream. */
    long start;

    /**
     * Offset just after the entry when another thread's walk read it ({@link SplitAhead}); -1 when the current
     * walk did (it is then where that walk stands).
     */
    long end;

    boolean phSeen;
    int cat;
    String name;
    long pid;
    boolean pidNumeric;
    long tid;
    boolean tidNumeric;
    long ts;
    long dur;
    Integer device;
    /**
     * {@code args.stream}, {@code args.correlation} and {@code args.External id}, {@link #MISSING} when absent: kept
     * unboxed until the entry becomes an event, so that the second reading thread's records of a file's second part
     * hold no object per id (fewer allocations there, fewer objects for the collector to copy while they wait).
     */
    long stream;

    long correlation;
    long externalId;
    String dims;

    /** The entry's bytes as another thread's walk kept them where {@link #unusable} (else null). */
    String snippet;

    /** Where {@link #snippet} is kept: the file's bytes that thread had read by then (gzip: compressed). */
    long rawRead;

    void reset(long entryStart) {
        start = entryStart;
        end = -1;
        phSeen = false;
        cat = CAT_UNSEEN;
        name = null;
        pid = 0;
        pidNumeric = false;
        tid = 0;
        tidNumeric = false;
        ts = MISSING;
        dur = MISSING;
        device = null;
        stream = MISSING;
        correlation = MISSING;
        externalId = MISSING;
        dims = null;
        snippet = null;
        rawRead = -1;
    }

    /** ts absent or unreadable: the reader reports the entry (MISSING_TS) and drops it. */
    boolean tsUnusable() {
        return ts == MISSING || ts == Micros.INVALID;
    }

    /** dur unreadable or negative: the reader reports the entry (NEGATIVE_DURATION) and drops it. */
    boolean durUnusable() {
        return dur == Micros.INVALID || (dur != MISSING && dur < 0);
    }

    /** The reader will report this entry as a problem, quoting its bytes (when it is an event at all). */
    boolean unusable() {
        return tsUnusable() || durUnusable();
    }

    /** {@code args.device}: an int, else absent. */
    void device(long n) {
        device = n == MISSING || n != (int) n ? null : Integer.valueOf((int) n);
    }

    static Long boxed(long n) {
        return n == MISSING ? null : Long.valueOf(n);
    }
}
