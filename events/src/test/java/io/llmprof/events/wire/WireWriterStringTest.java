package io.llmprof.events.wire;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.CodedOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** {@link WireWriter#writeString} and {@link WireWriter#stringSize} against protobuf's own, byte for byte. */
class WireWriterStringTest {
    private static byte[] write(String s, boolean ours) throws Exception {
        byte[] buffer = new byte[4 * s.length() + 32];
        CodedOutputStream out = CodedOutputStream.newInstance(buffer);
        if (ours) {
            WireWriter.writeString(out, 7, s);
        } else {
            out.writeString(7, s);
        }
        out.flush();
        return java.util.Arrays.copyOf(buffer, out.getTotalBytesWritten());
    }

    @Test
    void everyStringIsWrittenAndSizedAsProtobufDoes() throws Exception {
        List<String> strings = new ArrayList<>(List.of(
                "",
                "a",
                "req-0badf00d",
                "x".repeat(WireWriter.ASCII_CHARS - 1),
                "x".repeat(WireWriter.ASCII_CHARS),
                "x".repeat(WireWriter.ASCII_CHARS + 1),
                "x".repeat(200) + "\u00e9",
                "caf\u00e9",
                "\u007f\u0080",
                "\u4e2d\u6587",
                "\uD83D\uDE00",
                "\uD83D",
                "a\u0000b"));
        Random random = new Random(5L);
        char[] alphabet = {'a', 'Z', '0', ' ', '\u007f', '\u0080', '\u00ff', '\u0100', '\u4e2d', '\uD83D', '\uDE00'};
        for (int k = 0; k < 2_000; k++) {
            StringBuilder b = new StringBuilder();
            boolean mixed = random.nextBoolean(); // else ASCII only, from one of the ASCII characters above
            for (int n = random.nextInt(300); n > 0; n--) {
                b.append(
                        random.nextInt(4) > 0
                                ? (char) ('a' + random.nextInt(26))
                                : alphabet[random.nextInt(mixed ? alphabet.length : 5)]);
            }
            strings.add(b.toString());
        }
        int ascii = 0;
        for (String s : strings) {
            assertThat(write(s, true)).as(s).isEqualTo(write(s, false));
            assertThat(WireWriter.stringSize(7, s)).as(s).isEqualTo(CodedOutputStream.computeStringSize(7, s));
            if (s.chars().allMatch(c -> c < 0x80) && s.length() <= WireWriter.ASCII_CHARS) {
                ascii++;
            }
        }
        assertThat(ascii).as("strings the copy path took").isGreaterThan(100);
    }
}
