package io.llmprof.dashboard.api;

import io.javalin.http.Context;

/** The name parameters (rank, job, run, instance) every controller reads the same way: 1 to 256 characters. */
final class Params {
    static final int MAX_NAME_LENGTH = 256;

    private Params() {}

    /** The path parameter {@code name}; 400 when blank or longer than {@value #MAX_NAME_LENGTH} characters. */
    static String pathName(Context ctx, String name) {
        return ctx.pathParamAsClass(name, String.class)
                .check(v -> !v.isBlank() && v.length() <= MAX_NAME_LENGTH, "must be 1 to 256 characters")
                .get();
    }

    /** The query parameter {@code name}, null when absent; 400 when blank or longer than 256 characters. */
    static String queryName(Context ctx, String name) {
        String value = ctx.queryParam(name);
        if (value == null) {
            return null;
        }
        if (value.isBlank() || value.length() > MAX_NAME_LENGTH) {
            throw ApiException.badRequest(
                    "invalid_parameter", name + " must be 1 to 256 characters (got '" + value + "')");
        }
        return value;
    }
}
