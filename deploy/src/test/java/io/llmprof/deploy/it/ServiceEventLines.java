package io.llmprof.deploy.it;

/** JSON-lines v1 service events (docs/service-events.md) for the ITs that post to the HTTP ingest. */
public final class ServiceEventLines {
    private ServiceEventLines() {}

    /** One event of request {@code probe-1} on pid 1; {@code durNs} null for an instant, {@code extra} raw JSON fields. */
    public static String line(long tsNs, Long durNs, String domain, String name, String extra) {
        return line("probe-1", tsNs, durNs, domain, name, extra);
    }

    /** One event of request {@code rid} on pid 1. */
    public static String line(String rid, long tsNs, Long durNs, String domain, String name, String extra) {
        StringBuilder b = new StringBuilder("{\"v\":1,\"ts_ns\":").append(tsNs);
        if (durNs != null) {
            b.append(",\"dur_ns\":").append(durNs);
        }
        b.append(",\"domain\":\"")
                .append(domain)
                .append("\",\"name\":\"")
                .append(name)
                .append("\",\"pid\":1,\"rid\":\"")
                .append(rid)
                .append('"');
        if (extra != null) {
            b.append(',').append(extra);
        }
        return b.append('}').toString();
    }

    /**
     * A request that finishes in one body and feeds every service histogram: queued, scheduled in a batch of one,
     * a prefill and a decode forward (a bubble between them), two output tokens.
     */
    public static String finished(String rid, long t0) {
        return String.join(
                "\n",
                line(rid, t0, 10_000L, "Request", "httpReq", "\"recvTokenSize=\":8"),
                line(rid, t0 + 10_000, null, "Schedule", "Enqueue", null),
                line(rid, t0 + 30_000, null, "Schedule", "Dequeue", null),
                line(rid, t0 + 35_000, 2_000L, "Schedule", "BatchSchedule", "\"batchSize=\":1"),
                line(rid, t0 + 40_000, 100_000L, "ModelExecute", "modelExec", null),
                line(rid, t0 + 150_000, 20_000L, "ModelExecute", "modelExec", null),
                line(rid, t0 + 200_000, 10_000L, "Request", "httpRes", "\"replyTokenSize=\":2"));
    }
}
