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
}
