package io.llmprof.events.access;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;

/**
 * The bearer token every listener asks for when one is configured ({@value #ENV}, or {@code --api-token-file F}):
 * {@code Authorization: Bearer <token>}. Compared in constant time; never logged, never in {@link #toString()}.
 */
public final class ApiToken {
    /** The environment variable that holds the token. */
    public static final String ENV = "LLMPROF_API_TOKEN";

    /** Shortest token accepted: a guessable one would only look like protection. */
    public static final int MIN_LENGTH = 16;

    /** Longest token file read. */
    static final int MAX_FILE_BYTES = 4096;

    private static final ApiToken NONE = new ApiToken(null);
    private static final String BEARER = "bearer ";

    private final byte[] secret;

    private ApiToken(byte[] secret) {
        this.secret = secret;
    }

    /** No token: every request is let through. */
    public static ApiToken none() {
        return NONE;
    }

    /**
     * A token.
     *
     * @throws IllegalArgumentException when shorter than {@value #MIN_LENGTH} characters or holding whitespace or
     *     control characters
     */
    public static ApiToken of(String token) {
        if (token == null || token.length() < MIN_LENGTH) {
            throw new IllegalArgumentException("an API token must have at least " + MIN_LENGTH + " characters");
        }
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            if (c <= ' ' || c == 0x7f) {
                throw new IllegalArgumentException("an API token must not hold whitespace or control characters");
            }
        }
        return new ApiToken(token.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * The token of a command: the first line of {@code file} when given, else {@value #ENV} from {@code env} when
     * set and not blank, else {@link #none()}.
     *
     * @throws IllegalArgumentException when the file cannot be read, is empty or too large, or the token is bad
     */
    public static ApiToken resolve(Path file, Map<String, String> env) {
        if (file != null) {
            byte[] bytes;
            try (InputStream in = Files.newInputStream(file)) {
                bytes = in.readNBytes(MAX_FILE_BYTES + 1);
            } catch (IOException e) {
                throw new IllegalArgumentException("cannot read the API token file " + file + ": " + e.getMessage(), e);
            }
            if (bytes.length > MAX_FILE_BYTES) {
                throw new IllegalArgumentException("the API token file " + file + " is larger than " + MAX_FILE_BYTES
                        + " bytes: it should hold the token alone");
            }
            String text = new String(bytes, StandardCharsets.UTF_8);
            String line = text.lines().findFirst().orElse("").strip();
            if (line.isEmpty()) {
                throw new IllegalArgumentException("the API token file " + file + " is empty");
            }
            return of(line);
        }
        String value = env.get(ENV);
        return value == null || value.isBlank() ? none() : of(value.strip());
    }

    /** Whether requests must carry the token. */
    public boolean required() {
        return secret != null;
    }

    /** Whether a request with this {@code Authorization} header value (null when absent) may pass. */
    public boolean accepts(String authorization) {
        if (secret == null) {
            return true;
        }
        if (authorization == null
                || authorization.length() <= BEARER.length()
                || !authorization
                        .substring(0, BEARER.length())
                        .toLowerCase(Locale.ROOT)
                        .equals(BEARER)) {
            return false;
        }
        byte[] given = authorization.substring(BEARER.length()).strip().getBytes(StandardCharsets.UTF_8);
        return MessageDigest.isEqual(secret, given);
    }

    /** The header value a client sends: {@code Bearer <token>}; for this process's own clients and tests. */
    public String header() {
        if (secret == null) {
            throw new IllegalStateException("no API token is configured");
        }
        return "Bearer " + new String(secret, StandardCharsets.UTF_8);
    }

    /** The value of {@code WWW-Authenticate} on a 401. */
    public static String challenge() {
        return "Bearer realm=\"llmprof\"";
    }

    @Override
    public String toString() {
        return secret == null ? "ApiToken[none]" : "ApiToken[set]";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ApiToken t && Arrays.equals(secret, t.secret);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(secret);
    }
}
