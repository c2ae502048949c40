package io.llmprof.agent.kineto;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class MicrosTest {
    @ParameterizedTest
    @CsvSource({
        "0, 0",
        "1, 1000",
        "1.5, 1500",
        "0.001, 1",
        "-2.5, -2500",
        "1712195495505582.988, 1712195495505582988",
        "9000000000000000.999, 9000000000000000999",
        "1.7121954955055829e15, 1712195495505582900",
        "1e3, 1000000",
        "0.0004, 0",
        "0.0005, 0",
        "0.0015, 2",
        "12.34567, 12346",
    })
    void parsesMicrosTextToExactNanos(String text, long nanos) {
        assertThat(Micros.parse(text)).isEqualTo(nanos);
    }

    @ParameterizedTest
    @CsvSource({"abc", "1.2.3", "'' ", "99999999999999999999", "-"})
    void rejectsWhatIsNotAMicrosValue(String text) {
        assertThat(Micros.parse(text == null ? "" : text)).isEqualTo(Micros.INVALID);
    }

    @org.junit.jupiter.api.Test
    void theByteFastPathAgreesWithTheTextParserOrDefersToIt() {
        java.util.SplittableRandom random = new java.util.SplittableRandom(7);
        java.util.List<String> texts = new java.util.ArrayList<>(java.util.List.of(
                "0",
                "1",
                "1.5",
                "0.001",
                "1712195495505582.988",
                "9000000000000000.999",
                "999999999999999999",
                "9223372036854775.807",
                "1.2345",
                "1e3",
                "-2.5",
                ".5",
                "5.",
                "12abc",
                "1.7121954955055829e15"));
        for (int i = 0; i < 20_000; i++) {
            long whole = random.nextLong(0, Long.MAX_VALUE) >> random.nextInt(64);
            int digits = random.nextInt(0, 5);
            StringBuilder t = new StringBuilder(Long.toString(whole));
            if (digits > 0) {
                t.append('.');
                for (int d = 0; d < digits; d++) {
                    t.append((char) ('0' + random.nextInt(10)));
                }
            }
            texts.add(t.toString());
        }
        for (String text : texts) {
            byte[] bytes = text.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
            long fast = Micros.parseShort(bytes, 0, bytes.length);
            if (fast != Micros.INVALID) {
                assertThat(fast).as(text).isEqualTo(Micros.parse(text));
            } else {
                assertThat(text)
                        .as("deferred to the text parser")
                        .matches(t -> !t.matches("\\d{1,18}(\\.\\d{0,3})?") || Micros.parse(t) == Micros.INVALID);
            }
        }
    }
}
