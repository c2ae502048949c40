package io.llmprof.streams.service;

import io.llmprof.streams.service.ServiceState.Req;

/**
 * The open requests of one instance and the linked ids routed to them: what {@link ServiceAnalyzer} keeps per
 * request, behind one interface so that the same analyzer runs offline over a map ({@link MemoryRequestTable}) and
 * live over state stores ({@link StoredRequestTable}, one record per request).
 *
 * <p>Requests are ordered by when they were last added or touched, oldest first: timeouts and evictions take
 * {@link #oldest()}. A {@link Req} returned here may be changed by the caller; it must then be {@link #touch
 * touched} or {@link #remove removed} in the same event (a stored table writes back the requests touched).
 */
interface RequestTable {
    /** The open request of a primary id, or null. */
    Req get(String id);

    /** Adds a new request (its id not open) as the youngest. */
    void add(Req r);

    /** Moves an open request to the young end of the order. */
    void touch(Req r);

    /** Removes an open request. */
    void remove(Req r);

    /** The least recently added or touched open request, or null when none is open. */
    Req oldest();

    /** Open requests. */
    int size();

    /** The primary id a linked id routes to, or null. */
    String primary(String linkedId);

    /** Routes a linked id to a primary id (replacing any earlier route). */
    void link(String linkedId, String primaryId);

    /** Forgets a linked id's route. */
    void unlink(String linkedId);
}
