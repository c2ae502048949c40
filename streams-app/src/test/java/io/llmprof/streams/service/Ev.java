package io.llmprof.streams.service;

import io.llmprof.events.service.RequestIds;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceEvent;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Builds service events for tests: {@code Ev.of("Request", "httpReq", 100).rid("1").build()}. */
final class Ev {
    private final String domain;
    private final String name;
    private final long startNs;
    private Long durNs;
    private Long pid;
    private final List<RequestRef> refs = new ArrayList<>();
    private final Map<String, Double> metrics = new LinkedHashMap<>();
    private final Map<String, Double> deltas = new LinkedHashMap<>();
    private final Map<String, String> labels = new LinkedHashMap<>();

    private Ev(String domain, String name, long startNs) {
        this.domain = domain;
        this.name = name;
        this.startNs = startNs;
    }

    static Ev of(String domain, String name, long startNs) {
        return new Ev(domain, name, startNs);
    }

    Ev dur(long ns) {
        durNs = ns;
        return this;
    }

    Ev pid(long p) {
        pid = p;
        return this;
    }

    /** Request ids as a framework sends them (canonicalized like the readers do). */
    Ev rid(String... raw) {
        for (String r : raw) {
            refs.add(new RequestRef(RequestIds.canonical(r), r, null, null, null));
        }
        return this;
    }

    Ev ref(String rid, Long iter, String type, Long tokens) {
        refs.add(new RequestRef(RequestIds.canonical(rid), rid, iter, type, tokens));
        return this;
    }

    Ev metric(String k, double v) {
        metrics.put(k, v);
        return this;
    }

    Ev delta(String k, double v) {
        deltas.put(k, v);
        return this;
    }

    Ev label(String k, String v) {
        labels.put(k, v);
        return this;
    }

    ServiceEvent build() {
        return new ServiceEvent(domain, name, startNs, durNs, pid, null, refs, metrics, deltas, labels);
    }
}
