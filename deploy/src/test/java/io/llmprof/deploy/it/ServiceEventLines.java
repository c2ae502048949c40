package io.llmprof.deploy.it;

/** JSON-lines v1 service events (docs/service-events.md) for the ITs that post to the HTTP ingest. */
public final class ServiceEventLines {
    private ServiceEventLines() {}

    /** One event of request {@code probe-1} on pid 1; {@code durNs} null for an instant, {@code extra} raw JSON fields. */
    public static String line(long tsNs, Long durNs, String domain, String name, String extra) {
        StringBuilder b = new StringBuilder("{\"v\":1,\"ts_ns\":").append(tsNs);
        if (durNs != null) {
            b.append(",\"dur_ns\":").append(durNs);
        }
        b.append(",\"domain\":\"")
                .append(domain)
                .append("\",\"name\":\"")
                .append(name)
                .append("\",\"pid\":1,\"rid\":\"probe-1\"");
        if (extra != null) {
            b.append(',').append(extra);
        }
        return b.append('}').toString();
    }
}
