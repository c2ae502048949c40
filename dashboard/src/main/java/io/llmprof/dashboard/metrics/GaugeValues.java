package io.llmprof.dashboard.metrics;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;

/**
 * Gauges that show a value set from outside (host verdicts, service snapshots): each registered once, reading a
 * holder, so a new value is set without re-registering. A null value reads as NaN.
 */
final class GaugeValues {
    private final MeterRegistry registry;
    private final Map<Meter.Id, AtomicReference<Double>> values = new ConcurrentHashMap<>();

    GaugeValues(MeterRegistry registry) {
        this.registry = Objects.requireNonNull(registry, "registry");
    }

    /** The holder of the gauge, registered on first use. @param baseUnit null: none */
    AtomicReference<Double> holder(String name, String description, String baseUnit, Tags tags) {
        Meter.Id id = new Meter.Id(name, tags, baseUnit, null, Meter.Type.GAUGE);
        return values.computeIfAbsent(id, k -> {
            AtomicReference<Double> holder = new AtomicReference<>();
            Gauge.builder(name, holder, h -> h.get() == null ? Double.NaN : h.get())
                    .description(description)
                    .baseUnit(baseUnit)
                    .tags(tags)
                    .strongReference(true)
                    .register(registry);
            return holder;
        });
    }

    /**
     * Removes every meter of the registry whose id matches (the series of a retired pair), and forgets the holders of
     * the gauges among them, so that a later value registers its gauge again.
     */
    void forget(Predicate<Meter.Id> which) {
        values.keySet().removeIf(which);
        for (Meter m : registry.getMeters()) {
            if (which.test(m.getId())) {
                registry.remove(m);
            }
        }
    }
}
