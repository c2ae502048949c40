package io.llmprof.events.access;

/** What a listener's start-up banner says about who can reach it. */
public final class Binding {
    private Binding() {}

    /** Whether {@code host} is this machine only. */
    public static boolean loopback(String host) {
        return "127.0.0.1".equals(host) || "localhost".equals(host) || "::1".equals(host);
    }

    /** "this machine only (--bind to widen)" or "bound to HOST". */
    public static String describe(String host) {
        return loopback(host) ? "this machine only (--bind to widen)" : "bound to " + host;
    }
}
