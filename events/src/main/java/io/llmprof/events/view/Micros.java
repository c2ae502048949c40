package io.llmprof.events.view;

import java.math.BigDecimal;

/** ns -> µs for output, exact to the ns: a double cannot hold epoch µs with ns fractions. */
public final class Micros {
    private Micros() {}

    public static BigDecimal of(long ns) {
        return BigDecimal.valueOf(ns, 3);
    }
}
