package io.llmprof.events.service;

import java.util.Objects;

/**
 * One request an event refers to.
 *
 * @param rid the request id, canonical: integral numbers without a fraction ({@code 0.0} is {@code "0"}), a newer
 *     vLLM hash suffix ({@code -} and 8 hex digits) removed, so every event of one request carries the same id
 * @param rawRid the id exactly as the event sent it (as text)
 * @param iter the request's iteration (decode step) when the event says, else null
 * @param type the request's role in a batch ({@code prefill}, {@code decode}, ...) when the event says, else null
 * @param scheduledTokens tokens scheduled for it in this batch ({@code num_scheduled_tokens=}), else null
 */
public record RequestRef(String rid, String rawRid, Long iter, String type, Long scheduledTokens) {
    public RequestRef {
        Objects.requireNonNull(rid, "rid");
        rawRid = rawRid == null ? rid : rawRid;
    }

    public static RequestRef of(String rid) {
        return new RequestRef(rid, rid, null, null, null);
    }
}
