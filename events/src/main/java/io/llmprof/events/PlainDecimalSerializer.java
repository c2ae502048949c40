package io.llmprof.events;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.json.UTF8JsonGenerator;
import com.fasterxml.jackson.core.json.WriterBasedJsonGenerator;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.ser.std.StdScalarSerializer;
import java.io.IOException;
import java.math.BigDecimal;

/**
 * Writes a BigDecimal as {@link BigDecimal#toPlainString()} does (the mapper's WRITE_BIGDECIMAL_AS_PLAIN), without
 * its temporary strings and builders, for the common case of the µs values in reports (scale 0 to 9, unscaled
 * value within a long): a layer report writes hundreds of thousands of them. Other values, and generators that
 * keep tokens rather than text (a TokenBuffer must still see a BigDecimal), get Jackson's own writing.
 */
final class PlainDecimalSerializer extends StdScalarSerializer<BigDecimal> {
    private static final int MAX_SCALE = 9;

    PlainDecimalSerializer() {
        super(BigDecimal.class);
    }

    @Override
    public void serialize(BigDecimal value, JsonGenerator gen, SerializerProvider provider) throws IOException {
        int scale = value.scale();
        if (scale < 0
                || scale > MAX_SCALE
                || value.precision() > 18
                || !(gen instanceof WriterBasedJsonGenerator || gen instanceof UTF8JsonGenerator)) {
            gen.writeNumber(value);
            return;
        }
        // the unscaled value without a BigInteger: moving the point keeps a compact value compact
        long unscaled = value.movePointRight(scale).longValueExact();
        char[] out = new char[OUT];
        int at = plain(unscaled, scale, out);
        gen.writeNumber(out, at, OUT - at);
    }

    private static final int OUT = 21 + MAX_SCALE;

    /**
     * Writes toPlainString of unscaled x 10^-scale, for |unscaled| < 10^18 and 0 <= scale <= 9, at the end of {@code
     * out} ({@value #OUT} chars); returns where it starts.
     */
    private static int plain(long unscaled, int scale, char[] out) {
        int at = out.length;
        boolean negative = unscaled < 0;
        long rest = Math.abs(unscaled);
        for (int i = 0; i < scale; i++) {
            out[--at] = (char) ('0' + rest % 10);
            rest /= 10;
        }
        if (scale > 0) {
            out[--at] = '.';
        }
        do {
            out[--at] = (char) ('0' + rest % 10);
            rest /= 10;
        } while (rest > 0);
        if (negative) {
            out[--at] = '-';
        }
        return at;
    }
}
