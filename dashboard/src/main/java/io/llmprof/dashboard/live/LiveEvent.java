package io.llmprof.dashboard.live;

import java.util.Objects;

/**
 * One Server-Sent Event as it leaves: its name and its data, already JSON text (serialized once per flush,
 * whatever the number of clients).
 */
public record LiveEvent(String name, String data) {
    public static final String HELLO = "hello";
    public static final String PASS = "pass";
    public static final String CHANGED = "changed";

    public LiveEvent {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(data, "data");
    }
}
