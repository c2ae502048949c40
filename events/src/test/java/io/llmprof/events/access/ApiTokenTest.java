package io.llmprof.events.access;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ApiTokenTest {
    private static final String T = "s3cret-token-0123456789";

    @Test
    void withoutATokenEveryRequestPasses() {
        ApiToken none = ApiToken.none();
        assertThat(none.required()).isFalse();
        assertThat(none.accepts(null)).isTrue();
        assertThat(none.accepts("Bearer whatever")).isTrue();
    }

    @Test
    void withATokenOnlyTheRightBearerHeaderPasses() {
        ApiToken t = ApiToken.of(T);
        assertThat(t.required()).isTrue();
        assertThat(t.accepts("Bearer " + T)).isTrue();
        assertThat(t.accepts("bearer " + T)).isTrue();
        assertThat(t.accepts(null)).isFalse();
        assertThat(t.accepts("")).isFalse();
        assertThat(t.accepts("Bearer ")).isFalse();
        assertThat(t.accepts("Bearer " + T + "x")).isFalse();
        assertThat(t.accepts("Bearer " + T.substring(1))).isFalse();
        assertThat(t.accepts("Basic " + T)).isFalse();
        assertThat(t.accepts(T)).isFalse();
        assertThat(t.header()).isEqualTo("Bearer " + T);
        assertThat(t.toString()).doesNotContain(T);
    }

    @Test
    void weakOrMalformedTokensAreRefused() {
        assertThatThrownBy(() -> ApiToken.of("short")).hasMessageContaining("at least 16");
        assertThatThrownBy(() -> ApiToken.of("has a space in the middle")).hasMessageContaining("whitespace");
    }

    @Test
    void theFileWinsOverTheEnvironmentAndHoldsTheTokenOnItsFirstLine(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("token");
        Files.writeString(file, "  " + T + "  \nignored\n");
        assertThat(ApiToken.resolve(file, Map.of(ApiToken.ENV, "other-token-abcdefghij")))
                .isEqualTo(ApiToken.of(T));
        assertThat(ApiToken.resolve(null, Map.of(ApiToken.ENV, T))).isEqualTo(ApiToken.of(T));
        assertThat(ApiToken.resolve(null, Map.of(ApiToken.ENV, "  "))).isEqualTo(ApiToken.none());
        assertThat(ApiToken.resolve(null, Map.of())).isEqualTo(ApiToken.none());
    }

    @Test
    void aMissingEmptyOrHugeFileIsAClearError(@TempDir Path dir) throws Exception {
        assertThatThrownBy(() -> ApiToken.resolve(dir.resolve("nope"), Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("cannot read the API token file");
        Path empty = Files.writeString(dir.resolve("empty"), "\n");
        assertThatThrownBy(() -> ApiToken.resolve(empty, Map.of())).hasMessageContaining("is empty");
        Path huge = Files.writeString(dir.resolve("huge"), "x".repeat(5000));
        assertThatThrownBy(() -> ApiToken.resolve(huge, Map.of())).hasMessageContaining("larger than");
    }
}
