package io.llmprof.dashboard.api;

import io.javalin.http.Context;
import io.javalin.validation.Validator;

/**
 * Parameters every controller reads the same way: names (rank, job, run, instance) of 1 to 256 characters, and
 * counts (limit, points, steps) from 1 to a bound.
 */
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

    /** The integer query parameter {@code name}, checked to be 1 to {@code max}; absent: the caller's default. */
    static Validator<Integer> count(Context ctx, String name, int max) {
        return ctx.queryParamAsClass(name, Integer.class)
                .check(n -> n >= 1 && n <= max, "must be between 1 and " + max);
    }
}
