package io.llmprof.agent.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.StringCache;
import io.llmprof.agent.service.ServiceFixtures.Format;
import io.llmprof.events.service.ServiceEvent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The streamed reader ({@link StreamedLine}) against the tree reader it stands in for: on every line it reads, the
 * same event; on every other line, it declines, and {@link ServiceJsonLines#parse} gives the tree's event or the
 * tree's message.
 */
class ServiceJsonLinesFastPathTest {
    @TempDir
    Path dir;

    /** What the tree reader makes of a line: its event, or its message. */
    private static Object tree(String line) {
        try {
            return ServiceJsonLines.parseTree(line);
        } catch (IllegalArgumentException e) {
            return "error: " + e.getMessage();
        }
    }

    private static Object parse(String line) {
        try {
            return ServiceJsonLines.parse(line);
        } catch (IllegalArgumentException e) {
            return "error: " + e.getMessage();
        }
    }

    /**
     * Checks that {@code line} gives the tree's event or message through {@link ServiceJsonLines#parse}, and the
     * tree's event from the streamed reader when that reads it; 1 when it did, else 0.
     */
    private static int sameAsTheTree(String line) {
        Object tree = tree(line);
        ServiceEvent fast = StreamedLine.read(line);
        if (fast != null) {
            assertThat(fast).as(line).isEqualTo(tree);
        }
        assertThat(parse(line)).as(line).isEqualTo(tree);
        return fast != null ? 1 : 0;
    }

    @Test
    void everyLineOfASynthRunIsStreamedAndReadAsTheTreeReadsIt() throws Exception {
        // With MoE layers and KV cache events too: every kind of line the synth writes.
        ServiceSynth.write(new ServiceSynth.Spec(300, 2, 7L, 2, 4, 1, 512), Format.JSONL, dir);
        List<String> lines = Files.readAllLines(dir.resolve("events.jsonl"));
        assertThat(lines).hasSizeGreaterThan(3_000);
        for (String line : lines) {
            ServiceEvent streamed = StreamedLine.read(line);
            assertThat(streamed).as(line).isNotNull().isEqualTo(ServiceJsonLines.parseTree(line));
        }
    }

    @Test
    void oddLinesAreReadAsTheTreeReadsThem() {
        List<String> lines = List.of(
                "{\"ts_ns\":1,\"name\":\"a\",\"name\":\"b\"}", // duplicate key: the tree keeps the last
                "{\"ts_ns\":1,\"name\":\"a\",\"x=\":1,\"x=\":\"text\"}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":\"1\",\"rid\":\"2\"}",
                "{\"ts_ns\":1.6,\"name\":\"a\"}", // fractional ts rounds
                "{\"ts_ns\":99999999999999999999,\"name\":\"a\"}",
                "{\"ts_ns\":\"5\",\"name\":\"a\"}",
                "{\"v\":1.0,\"ts_ns\":1,\"name\":\"a\"}",
                "{\"v\":null,\"ts_ns\":1,\"name\":\"a\"}",
                "{\"v\":2,\"ts_ns\":1,\"name\":\"a\"}",
                "{\"ts_ns\":1,\"name\":\"\"}",
                "{\"ts_ns\":1,\"name\":5}",
                "{\"ts_ns\":1,\"name\":\"a\",\"domain\":7,\"tid\":8,\"pid\":\"9\"}",
                "{\"ts_ns\":1,\"name\":\"a\",\"domain\":null,\"tid\":null,\"pid\":null,\"dur_ns\":null}",
                "{\"ts_ns\":1,\"name\":\"a\",\"dur_ns\":-1}",
                "{\"ts_ns\":1,\"name\":\"a\",\"pid\":2.5}",
                "{\"ts_ns\":1,\"name\":\"a\",\"label\":12}", // a number as a label: its text
                "{\"ts_ns\":1,\"name\":\"a\",\"label\":1.0E3}",
                "{\"ts_ns\":1,\"name\":\"a\",\"label\":{\"x\":[1,2]}}",
                "{\"ts_ns\":1,\"name\":\"a\",\"flag=\":true,\"off+\":false,\"b\":true}",
                "{\"ts_ns\":1,\"name\":\"a\",\"=QueueSize\":3,\"+WAITING\":\" 2 \",\"x=\":\"NaN\",\"y=\":\"n/a\"}",
                "{\"ts_ns\":1,\"name\":\"a\",\"=\":3,\"+\":4}",
                "{\"ts_ns\":1,\"name\":\"a\",\"big=\":123456789012345678901234567890}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":7}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":\"[1, 2]\"}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":\"req-0badf00d\"}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":[\"1\",null,\"2.0\"]}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":[[\"1\"]]}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":[{\"rid\":\"1\",\"iter\":null,\"type\":null}]}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":[{\"rid\":1,\"iter\":2}]}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":[{\"rid\":null}]}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":[{\"iter\":2}]}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":[{\"rid\":\"1\",\"iter\":2.0}]}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":[{\"rid\":\"1\",\"iter=\":2}]}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":[{\"rid\":\"1\",\"num_scheduled_tokens\":5}]}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":[{\"rid\":\"1\",\"num_scheduled_tokens+\":5}]}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":[{\"rid\":\"1\",\"num_scheduled_tokens\":5,"
                        + "\"num_scheduled_tokens=\":6}]}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":[{\"rid\":\"1\",\"rid\":\"2\"}]}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":[{\"rid\":\"1\",\"other\":\"x\"}]}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":[{\"rid\":[\"1\",\"2\"]}]}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid_list\":[\"3\"],\"rids\":\"4\"}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":{\"rid\":\"5\",\"iter\":1}}",
                "{\"ts_ns\":1,\"name\":\"a\"} trailing",
                "{\"ts_ns\":1,\"name\":\"a\"}{}",
                "{\"ts_ns\":1,\"name\":\"a\"",
                "{\"ts_ns\":1,\"name\":\"a\",}",
                "{\"ts_ns\":1,\"name\":\"\\u00e9\\n\",\"k\\\"\":\"v\\\\\"}",
                "{}",
                "{\"name\":\"a\"}",
                // keys matched in place (knownKey): escaped spellings, near misses of the same length, repeats
                "{\"t\\u0073_ns\":1,\"n\\u0061me\":\"a\",\"r\\u0069d\":[{\"r\\u0069d\":\"1\",\"it\\u0065r\":2}]}",
                "{\"ts_ns\":1,\"t\\u0073_ns\":2,\"name\":\"a\"}",
                "{\"ts_ns\":1,\"name\":\"a\",\"pix\":\"1\",\"tie\":\"2\",\"rim\":\"3\",\"nama\":\"4\",\"iteR\":\"5\",\"typo\":\"6\"}",
                "{\"ts_ns\":1,\"name\":\"a\",\"ts_nx\":\"1\",\"durans\":\"2\",\"domaim\":\"3\",\"w\":\"4\",\"\":\"5\"}",
                "{\"ts_ns\":1,\"name\":\"a\",\"num_scheduled_tokenz=\":1,\"pid\":2,\"tid\":\"3\",\"dur_ns\":4}",
                "{\"ts_ns\":1,\"name\":\"a\",\"rid\":[{\"rid\":\"1\",\"num_scheduled_tokens=\":5,\"type\":\"d\"}]}",
                "{\"ts_ns\":1,\"name\":\"a\",\"name\":\"b\"}",
                "{\"ts_ns\":1,\"name\":\"a\",\"domain\":\"d\",\"v\":1,\"ti\\\"\":\"2\"}");
        for (String line : lines) {
            sameAsTheTree(line);
        }
        // The plain shapes among them are streamed: the test would not notice a reader that always declines.
        assertThat(StreamedLine.read(lines.get(18))).isNotNull();
        assertThat(StreamedLine.read(lines.get(25))).isNotNull();
        assertThat(StreamedLine.read(lines.get(27))).isNotNull();
        assertThat(StreamedLine.read(lines.get(33))).isNotNull();
        assertThat(StreamedLine.read(lines.get(39))).isNotNull();
        assertThat(StreamedLine.read(lines.get(0))).isNull();
        for (int k = lines.size() - 8; k < lines.size(); k++) {
            boolean repeat =
                    lines.get(k).contains("t\\u0073_ns\":2") || lines.get(k).contains("\"name\":\"b\"");
            assertThat(StreamedLine.read(lines.get(k))).as(lines.get(k)).matches(e -> repeat == (e == null));
        }
    }

    /** A line that spans reads is read from the copy; one within a read, where it lies: the same events. */
    @Test
    void linesSplitAcrossReadsGiveTheSameEventsAndProblems() throws Exception {
        ServiceSynth.write(new ServiceSynth.Spec(40, 1, 3L), Format.JSONL, dir);
        String text = Files.readString(dir.resolve("events.jsonl")) + "not json\n{\"ts_ns\":1}\n" + "{\"x\":"
                + "1".repeat(3000) + "}\n";
        List<Object> whole = new ArrayList<>();
        ServiceJsonLines.Summary all = read(new java.io.StringReader(text), whole);
        for (int chunk : new int[] {1, 2, 7, 100, 4096}) {
            List<Object> split = new ArrayList<>();
            java.io.Reader reader = new java.io.FilterReader(new java.io.StringReader(text)) {
                @Override
                public int read(char[] cbuf, int off, int len) throws java.io.IOException {
                    return super.read(cbuf, off, Math.min(len, chunk));
                }
            };
            ServiceJsonLines.Summary s = read(reader, split);
            assertThat(s).isEqualTo(all);
            assertThat(split).as("reads of %d characters", chunk).containsExactlyElementsOf(whole);
        }
        long lines = text.lines().count();
        assertThat(all).isEqualTo(new ServiceJsonLines.Summary(lines, lines - 3, 3));
        assertThat(whole.subList(whole.size() - 3, whole.size()))
                .containsExactly(
                        "line " + (lines - 2) + ": not a JSON object (it must start with '{')",
                        "line " + (lines - 1) + ": no name",
                        "line " + lines + ": line is longer than 2048 characters: skipped");
    }

    /**
     * A line read where it lies in the read buffer, up to its newline, gives what the same line read after its end
     * was found gives: odd line ends, white space, a line exactly at the limit and one past it, an object cut by a
     * newline, text after the object, and a last line without a newline. Reads of one character are the reference:
     * no line lies whole in such a read.
     */
    @Test
    void linesReadWhereTheyLieGiveWhatLinesReadAfterTheirEndGive() throws Exception {
        String ok = "{\"ts_ns\":1,\"name\":\"a\",\"rid\":\"7\"}";
        String atLimit = "{\"ts_ns\":2,\"name\":\"" + "n".repeat(2048 - 21) + "\"}";
        assertThat(atLimit).hasSize(2048);
        String text = ok + "\n" + "\n" + "   \n" + ok + "\r\n" + "  \t" + ok + " \t\r\n" + ok + " x\n" + ok + "}\n"
                + "{\"ts_ns\":3,\n\"name\":\"cut\"}\n" + "{\"ts_ns\":4,\"name\":\"a\nb\"}\n" + atLimit + "\n"
                + atLimit.replace("\"}", "m\"}") + "\n" + "\u000b" + ok + "\n" + "{\"ts_ns\":5,\"name\":\"é\"}\n"
                + ok + "\n" + ok;
        List<Object> reference = new ArrayList<>();
        ServiceJsonLines.Summary expected = read(chunked(text, 1), reference);
        assertThat(expected.events())
                .isEqualTo(10); // Jackson takes an object followed by text, and \u000b as white space
        for (int chunk : new int[] {2, 3, 41, 100, 2049, 4096, 1 << 16}) {
            List<Object> got = new ArrayList<>();
            assertThat(read(chunked(text, chunk), got)).as("reads of %d", chunk).isEqualTo(expected);
            assertThat(got).as("reads of %d", chunk).containsExactlyElementsOf(reference);
        }
        assertThat(reference)
                .filteredOn(String.class::isInstance)
                .hasSize((int) expected.problems())
                .anyMatch(m -> m.toString().startsWith("line 13: line is longer than 2048"));
    }

    private static java.io.Reader chunked(String text, int chunk) {
        return new java.io.FilterReader(new java.io.StringReader(text)) {
            @Override
            public int read(char[] cbuf, int off, int len) throws java.io.IOException {
                return super.read(cbuf, off, Math.min(len, chunk));
            }
        };
    }

    /** Events and problem messages in the order they came, lines of at most 2048 characters. */
    private static ServiceJsonLines.Summary read(java.io.Reader reader, List<Object> out) throws Exception {
        return ServiceJsonLines.read("f", reader, 2048, out::add, new ServiceJsonLines.Problems() {
            @Override
            public boolean wantsDetail() {
                return true;
            }

            @Override
            public void bad(io.llmprof.agent.kineto.InputProblem problem, String line) {
                out.add(problem.message());
            }

            @Override
            public void counted(io.llmprof.events.AnomalyKind kind) {}
        });
    }

    /** Lines put together at random from well-formed and odd pieces: the streamed reader never differs. */
    @Test
    void randomLinesAreReadAsTheTreeReadsThem() {
        String[] reserved = {
            "\"v\":1",
            "\"v\":2",
            "\"ts_ns\":12",
            "\"ts_ns\":-3",
            "\"ts_ns\":1e3",
            "\"dur_ns\":5",
            "\"dur_ns\":null",
            "\"name\":\"n\"",
            "\"name\":\"\"",
            "\"domain\":\"d\"",
            "\"domain\":1",
            "\"pid\":4",
            "\"pid\":\"4\"",
            "\"tid\":\"t\"",
            "\"tid\":[1]"
        };
        String[] attributes = {
            "\"rid\":\"9\"",
            "\"rid\":\"x-deadbeef\"",
            "\"rid\":[]",
            "\"rid\":[{\"rid\":\"1\",\"iter\":0,\"type\":\"decode\"}]",
            "\"rid\":[{\"rid\":\"2\",\"num_scheduled_tokens=\":16}]",
            "\"rid\":[\"3\",{\"rid\":\"4\"}]",
            "\"rid\":null",
            "\"QueueSize=\":5",
            "\"QueueSize=\":\"5\"",
            "\"WAITING+\":-1.5",
            "\"scope#dp\":\"0\"",
            "\"scope#dp\":0",
            "\"x=\":true",
            "\"lbl\":\"text\"",
            "\"lbl\":null",
            "\"obj\":{\"a\":1}",
            "\"arr=\":[1]",
            "\"=Q\":2"
        };
        Random random = new Random(20261127L);
        int streamed = 0;
        // One reader for every line too, as an input's reader is: what a declined line left must not reach the next
        StreamedLine oneReader = new StreamedLine(new StringCache(1024, StreamedLine.MAX_CACHED_CHARS));
        int declinedThenRead = 0;
        boolean lastDeclined = false;
        for (int i = 0; i < 20_000; i++) {
            List<String> parts = new ArrayList<>();
            parts.add(reserved[2]);
            parts.add(reserved[7]);
            for (int k = random.nextInt(4); k > 0; k--) {
                parts.add(reserved[random.nextInt(reserved.length)]);
            }
            for (int k = random.nextInt(5); k > 0; k--) {
                parts.add(attributes[random.nextInt(attributes.length)]);
            }
            java.util.Collections.shuffle(parts, random);
            String line = "{" + String.join(",", parts) + "}";
            streamed += sameAsTheTree(line);
            char[] chars = line.toCharArray();
            ServiceEvent again = oneReader.read(chars, 0, chars.length);
            assertThat(again).as(line).isEqualTo(StreamedLine.read(line));
            if (again != null && lastDeclined) {
                declinedThenRead++;
            }
            lastDeclined = again == null;
        }
        assertThat(streamed).as("lines the streamed reader took").isGreaterThan(1_000);
        assertThat(declinedThenRead).as("lines read right after a declined one").isGreaterThan(1_000);
    }
    /**
     * Numbers as Jackson reads them: integers at a long's limits and beyond, fractions of up to 15 digits (read
     * without a string) and longer ones, exponents, negative zero, and the tokens JSON does not allow.
     */
    @Test
    void numbersAreReadAsTheTreeReadsThem() {
        List<String> values = new ArrayList<>(List.of(
                "0",
                "-0",
                "0.0",
                "-0.0",
                "1",
                "-1",
                "0.1",
                "0.3",
                "-2.5",
                "123456789012345",
                "1234567890.12345",
                "0.000000000000001",
                "1234567890.123456",
                "0.1234567890123456789",
                "9007199254740993",
                "9223372036854775807",
                "-9223372036854775808",
                "9223372036854775808",
                "-9223372036854775809",
                "1e3",
                "1E-3",
                "2.5e+10",
                "1e400",
                "-1e-400",
                "00",
                "01",
                "-",
                "+1",
                ".5",
                "1.",
                "1.e3",
                "1e",
                "0x10",
                "NaN",
                "1" + "0".repeat(StreamedLine.MAX_NUMBER_CHARS),
                "0." + "1".repeat(50)));
        Random random = new Random(11L);
        for (int k = 0; k < 3_000; k++) {
            StringBuilder b = new StringBuilder(random.nextBoolean() ? "-" : "");
            b.append(random.nextInt(10) == 0 ? "0" : Integer.toString(1 + random.nextInt(999_999)));
            if (random.nextInt(4) > 0) {
                b.append('.');
                for (int d = 1 + random.nextInt(17); d > 0; d--) {
                    b.append((char) ('0' + random.nextInt(10)));
                }
            }
            if (random.nextInt(5) == 0) {
                b.append(random.nextBoolean() ? 'e' : 'E').append(random.nextInt(40) - 20);
            }
            values.add(b.toString());
        }
        int streamed = 0;
        for (String value : values) {
            for (String line : List.of(
                    "{\"ts_ns\":" + value + ",\"name\":\"a\"}",
                    "{\"ts_ns\":1,\"name\":\"a\",\"x=\":" + value + ",\"y+\":" + value + "}",
                    "{\"ts_ns\":1,\"name\":\"a\",\"rid\":[{\"rid\":\"1\",\"iter\":" + value + "}]}")) {
                streamed += sameAsTheTree(line);
            }
        }
        assertThat(streamed).as("lines the streamed reader took").isGreaterThan(3_000);
    }

    /** Strings with escapes, non-ASCII text, control characters and white space between tokens, as the tree. */
    @Test
    void stringsAndSpacesAreReadAsTheTreeReadsThem() {
        String[] pieces = {
            "a",
            "\\\"",
            "\\\\",
            "\\/",
            "\\b",
            "\\f",
            "\\n",
            "\\r",
            "\\t",
            "\\u00e9",
            "\\uD83D\\uDE00",
            "\\u12",
            "\\x",
            "\u00e9",
            "\u4e2d",
            "\t",
            "\u0001",
            " ",
            "=",
            "+",
            "1"
        };
        String[] spaces = {"", " ", "\t", "\r", "  ", "\u000b", "\u00a0"};
        Random random = new Random(12L);
        int streamed = 0;
        for (int k = 0; k < 5_000; k++) {
            String sp = spaces[random.nextInt(spaces.length)];
            String line = sp + "{" + sp + "\"ts_ns\"" + sp + ":" + sp + "1" + sp + "," + sp + "\"name\":\""
                    + text(random, pieces) + "\"," + sp + "\"" + text(random, pieces) + "\":\"" + text(random, pieces)
                    + "\"," + "\"rid\":[" + sp + "\"" + text(random, pieces) + "\"" + sp + "]" + sp + "}" + sp;
            streamed += sameAsTheTree(line);
        }
        assertThat(streamed).as("lines the streamed reader took").isGreaterThan(500);
    }

    private static String text(Random random, String[] pieces) {
        StringBuilder b = new StringBuilder();
        for (int n = 1 + random.nextInt(3); n > 0; n--) {
            b.append(pieces[random.nextInt(pieces.length)]);
        }
        return b.toString();
    }
}
