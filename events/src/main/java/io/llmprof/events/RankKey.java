package io.llmprof.events;

/**
 * Record key of everything per rank: {@code <job>/<rank>}. A rank is one device of one process of one
 * job; kernels of different ranks are never merged into one sequence.
 */
public final class RankKey {
    private RankKey() {}

    public static String of(String job, String rank) {
        return job + "/" + rank;
    }

    public static String job(String key) {
        int i = key.lastIndexOf('/');
        return i < 0 ? "" : key.substring(0, i);
    }

    public static String rank(String key) {
        int i = key.lastIndexOf('/');
        return i < 0 ? key : key.substring(i + 1);
    }
}
