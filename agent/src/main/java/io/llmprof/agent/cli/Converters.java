package io.llmprof.agent.cli;

import io.llmprof.agent.replay.Speed;
import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** Option value converters. */
final class Converters {
    private Converters() {}

    private static final Pattern DURATION = Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*(ms|s|m|h)?");

    /** {@code 500ms}, {@code 2s}, {@code 1.5s}, {@code 1m}, a bare number of seconds, or ISO-8601 {@code PT2S}. */
    static final class DurationConverter implements ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            return parseDuration(value);
        }
    }

    static Duration parseDuration(String value) {
        String v = value.trim().toLowerCase(Locale.ROOT);
        if (v.startsWith("pt") || v.startsWith("p")) {
            try {
                return Duration.parse(value.trim().toUpperCase(Locale.ROOT));
            } catch (RuntimeException e) {
                throw new TypeConversionException("not a duration: '" + value + "'");
            }
        }
        Matcher m = DURATION.matcher(v);
        if (!m.matches()) {
            throw new TypeConversionException("not a duration: '" + value + "' (use e.g. 500ms, 2s, 1m)");
        }
        double amount = Double.parseDouble(m.group(1));
        String unit = m.group(2) == null ? "s" : m.group(2);
        double millis =
                switch (unit) {
                    case "ms" -> amount;
                    case "s" -> amount * 1_000;
                    case "m" -> amount * 60_000;
                    default -> amount * 3_600_000;
                };
        return Duration.ofMillis(Math.round(millis));
    }

    /** {@code max} or a positive factor ({@code 2}, {@code 0.5}, {@code 10x}). */
    static final class SpeedConverter implements ITypeConverter<Speed> {
        @Override
        public Speed convert(String value) {
            try {
                return Speed.parse(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }
}
