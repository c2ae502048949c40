package io.llmprof.agent.kineto;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * {@link ByteScanner#skipValue()} and {@link ByteScanner#skipRestOfObject()} take a loop over the buffer where they
 * can and the checking walk where they cannot: on random values, well formed and damaged, read in random chunk sizes
 * (so that values cross the buffer's end), each must stop where the walk alone stops, or fail where it fails.
 */
class ByteScannerSkipTest {
    private static final String[] ATOMS = {
        "0",
        "-0",
        "12",
        "-7",
        "3.25",
        "1e9",
        "2E-3",
        "-0.5e+2",
        "123456789012345678901234567890",
        "true",
        "false",
        "null",
        "\"\"",
        "\"x\"",
        "\"a b\"",
        "\"aten::mm\"",
        "\"\\n\"",
        "\"\\u00e9\"",
        "\"caf\u00e9\"",
        "\"tab\there\""
    };

    private static final String[] BROKEN = {
        "01",
        "1.",
        ".5",
        "1e",
        "-",
        "tru",
        "nul",
        "truex",
        "\"open",
        "\"bad \\q\"",
        "1x",
        "+1",
        "'s'",
        "[1,]",
        "{,}",
        "{\"a\" 1}",
        "{\"a\":}",
        "{1:2}",
        "[1 2]",
        "]",
        "}",
        ",",
        ":",
        "\u0001",
        "{\"a\":1,}"
    };

    @Test
    void theLoopStopsWhereTheWalkStopsOrLeavesItToTheWalk() {
        Random random = new Random(20261128);
        int same = 0;
        int bothFailed = 0;
        for (int n = 0; n < 40_000; n++) {
            StringBuilder value = new StringBuilder();
            value(value, random, 0);
            String text = value.toString();
            if (random.nextInt(4) == 0) {
                text = damaged(text, random);
            }
            // what follows a value inside a container, then more input
            String input = ws(random) + text + ws(random) + (random.nextBoolean() ? "," : "]") + " 7";
            byte[] bytes = input.getBytes(StandardCharsets.UTF_8);
            int chunk = 1 + random.nextInt(random.nextBoolean() ? 12 : 400);
            Outcome fast = run(bytes, chunk, ByteScanner::skipValue);
            Outcome walk = run(bytes, chunk, ByteScanner::skipValueByWalk);
            assertThat(fast).as("%s in chunks of %d", input, chunk).isEqualTo(walk);
            if (walk.position >= 0) {
                same++;
            } else {
                bothFailed++;
            }
        }
        assertThat(same).isGreaterThan(20_000);
        assertThat(bothFailed).isGreaterThan(3_000);
    }

    @Test
    void theRestOfAnObjectStopsWhereTheWalkStops() {
        Random random = new Random(1128);
        int same = 0;
        int bothFailed = 0;
        for (int n = 0; n < 20_000; n++) {
            StringBuilder rest = new StringBuilder();
            int members = random.nextInt(5);
            for (int m = 0; m < members; m++) {
                rest.append(',')
                        .append(ws(random))
                        .append('"')
                        .append(name(random))
                        .append('"')
                        .append(ws(random));
                rest.append(':').append(ws(random));
                value(rest, random, 1);
            }
            rest.append(ws(random)).append('}');
            String text = random.nextInt(4) == 0 ? damaged(rest.toString(), random) : rest.toString();
            byte[] bytes = (ws(random) + text + ", {}").getBytes(StandardCharsets.UTF_8);
            int chunk = 1 + random.nextInt(random.nextBoolean() ? 12 : 400);
            Outcome fast = run(bytes, chunk, ByteScanner::skipRestOfObject);
            Outcome walk = run(bytes, chunk, ByteScanner::skipRestOfObjectByWalk);
            assertThat(fast).as("%s in chunks of %d", text, chunk).isEqualTo(walk);
            if (walk.position >= 0) {
                same++;
            } else {
                bothFailed++;
            }
        }
        assertThat(same).isGreaterThan(5_000);
        assertThat(bothFailed).isGreaterThan(1_000);
    }

    @Test
    void deepNestingLongNamesAndLongNumbersAreLeftToTheWalk() {
        String deep = "[".repeat(300) + "]".repeat(300);
        String deepEnough = "[".repeat(150) + "1" + "]".repeat(150);
        String longName = "{\"" + "n".repeat(50_001) + "\": 1}";
        String longNumber = "1".repeat(501);
        for (String value : new String[] {deep, deepEnough, longName, longNumber}) {
            byte[] bytes = (value + " ]").getBytes(StandardCharsets.UTF_8);
            assertThat(run(bytes, 8000, ByteScanner::skipValue))
                    .as(value.substring(0, 20))
                    .isEqualTo(run(bytes, 8000, ByteScanner::skipValueByWalk));
        }
        assertThat(run(
                                ("[".repeat(300) + "]".repeat(300)).getBytes(StandardCharsets.UTF_8),
                                8000,
                                ByteScanner::skipValue)
                        .position)
                .as("201 levels are refused")
                .isEqualTo(-1);
        assertThat(run(deepEnough.getBytes(StandardCharsets.UTF_8), 8000, ByteScanner::skipValue).position)
                .isEqualTo(deepEnough.length());
    }

    private record Outcome(long position, String failure) {}

    /**
     * Skips from just after a leading '[' (read first, so that the buffer holds a chunk as it does mid-file, where the
     * loop runs); the position is then that of {@code bytes}, less the '['.
     */
    private static Outcome run(byte[] bytes, int chunk, Consumer<ByteScanner> skip) {
        byte[] input = new byte[bytes.length + 1];
        input[0] = '[';
        System.arraycopy(bytes, 0, input, 1, bytes.length);
        ByteScanner s = new ByteScanner(new ChunkedStream(input, chunk), -1);
        s.expect('[');
        try {
            skip.accept(s);
            return new Outcome(s.position(), null);
        } catch (ByteScanner.Bail e) {
            return new Outcome(-1, e.getMessage());
        }
    }

    private static void value(StringBuilder out, Random random, int depth) {
        int kind = depth > 6 ? 0 : random.nextInt(10);
        if (kind < 6) {
            out.append(ATOMS[random.nextInt(ATOMS.length)]);
        } else if (kind < 8) {
            out.append('[').append(ws(random));
            int n = random.nextInt(5);
            for (int k = 0; k < n; k++) {
                if (k > 0) {
                    out.append(ws(random)).append(',').append(ws(random));
                }
                value(out, random, depth + 1);
            }
            out.append(ws(random)).append(']');
        } else {
            out.append('{').append(ws(random));
            int n = random.nextInt(5);
            for (int k = 0; k < n; k++) {
                if (k > 0) {
                    out.append(ws(random)).append(',').append(ws(random));
                }
                out.append('"')
                        .append(name(random))
                        .append('"')
                        .append(ws(random))
                        .append(':')
                        .append(ws(random));
                value(out, random, depth + 1);
            }
            out.append(ws(random)).append('}');
        }
    }

    private static String name(Random random) {
        String[] names = {"ph", "External id", "Input Dims", "a\\\"b", "", "grid", "x\u00e9"};
        return names[random.nextInt(names.length)];
    }

    private static String ws(Random random) {
        String[] ws = {"", "", " ", "\n    ", "\t", "\r\n", "  "};
        return ws[random.nextInt(ws.length)];
    }

    private static final String NOISE = "{}[],:\"\\ 0-.eEtfn\u0002";

    /** One byte replaced, removed or repeated, or a broken token put in, or the text cut. */
    private static String damaged(String text, Random random) {
        if (text.isEmpty()) {
            return BROKEN[random.nextInt(BROKEN.length)];
        }
        int at = random.nextInt(text.length());
        return switch (random.nextInt(5)) {
            case 0 -> text.substring(0, at) + NOISE.charAt(random.nextInt(NOISE.length())) + text.substring(at + 1);
            case 1 -> text.substring(0, at) + text.substring(at + 1);
            case 2 -> text.substring(0, at) + text.charAt(at) + text.substring(at);
            case 3 -> text.substring(0, at) + BROKEN[random.nextInt(BROKEN.length)] + text.substring(at);
            default -> text.substring(0, at);
        };
    }

    /** Returns at most {@code chunk} bytes per read. */
    private static final class ChunkedStream extends InputStream {
        private final ByteArrayInputStream in;
        private final int chunk;

        ChunkedStream(byte[] bytes, int chunk) {
            this.in = new ByteArrayInputStream(bytes);
            this.chunk = chunk;
        }

        @Override
        public int read() {
            return in.read();
        }

        @Override
        public int read(byte[] b, int off, int len) {
            return in.read(b, off, Math.min(len, chunk));
        }
    }
}
