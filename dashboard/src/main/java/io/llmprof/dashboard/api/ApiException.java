package io.llmprof.dashboard.api;

/**
 * A request the API answers with an error: {@code status}, a stable {@code error} code for programs and
 * a {@code message} for the person reading it (what was wrong and what to do).
 */
final class ApiException extends RuntimeException {
    private final int status;
    private final String error;

    private ApiException(int status, String error, String message) {
        super(message, null, false, false);
        this.status = status;
        this.error = error;
    }

    static ApiException notFound(String error, String message) {
        return new ApiException(404, error, message);
    }

    static ApiException badRequest(String error, String message) {
        return new ApiException(400, error, message);
    }

    static ApiException conflict(String error, String message) {
        return new ApiException(409, error, message);
    }

    static ApiException notAcceptable(String error, String message) {
        return new ApiException(406, error, message);
    }

    static ApiException unavailable(String error, String message) {
        return new ApiException(503, error, message);
    }

    int status() {
        return status;
    }

    String error() {
        return error;
    }
}
