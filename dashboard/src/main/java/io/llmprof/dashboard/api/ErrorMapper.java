package io.llmprof.dashboard.api;

import io.javalin.Javalin;
import io.javalin.http.Context;
import io.javalin.http.HttpResponseException;
import io.javalin.validation.ValidationError;
import io.javalin.validation.ValidationException;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The one exception mapper: every error leaves as {@link ErrorResponse} JSON. */
final class ErrorMapper {
    private static final Logger LOG = LoggerFactory.getLogger(ErrorMapper.class);
    private static final String TYPE_CONVERSION_FAILED = "TYPE_CONVERSION_FAILED";

    private ErrorMapper() {}

    static void register(Javalin app) {
        // Javalin has defaults for these two that win over an Exception handler: replace them.
        app.exception(ValidationException.class, ErrorMapper::handle);
        app.exception(HttpResponseException.class, ErrorMapper::handle);
        app.exception(Exception.class, ErrorMapper::handle);
    }

    private static void handle(Exception e, Context ctx) {
        if (e instanceof ApiException api) {
            respond(ctx, api.status(), api.error(), api.getMessage());
        } else if (e instanceof ValidationException invalid) {
            respond(ctx, 400, "invalid_parameter", describe(invalid.getErrors()));
        } else if (e instanceof HttpResponseException http) {
            // Javalin's own: unknown path (404), wrong method (405), ...
            String message = http.getStatus() == 404
                    ? "no endpoint " + ctx.method() + " " + ctx.path()
                            + "; endpoints: GET /api/ranks, /api/ranks/{rank}/passes,"
                            + " /api/ranks/{rank}/passes/{index}, /api/ranks/{rank}/host, /api/jobs,"
                            + " /api/jobs/{job}/passes, /api/jobs/{job}/stragglers, /api/jobs/{job}/compare,"
                            + " GET|PUT|DELETE /api/jobs/{job}/baseline, /api/requests, /api/requests/{rid},"
                            + " /api/batches, /api/forwards, /api/kvcache, /api/request-states, /api/pd,"
                            + " /api/coordinator, /api/ep-balance, /api/moe, /api/ranks/{rank}/timeline,"
                            + " /api/ranks/{rank}/host/history, /api/service/summary, /api/anomalies,"
                            + " /api/dead-letters, /api/live (SSE), /api/ui-config, /health, /metrics; the web page is"
                            + " at /"
                    : http.getMessage();
            respond(ctx, http.getStatus(), http.getStatus() == 404 ? "not_found" : "http_error", message);
        } else {
            LOG.error("{} {} failed", ctx.method(), ctx.path(), e);
            respond(
                    ctx,
                    500,
                    "internal_error",
                    "the dashboard failed to answer (" + e.getClass().getSimpleName() + "); details are in its log");
        }
    }

    private static void respond(Context ctx, int status, String error, String message) {
        ctx.status(status).json(new ErrorResponse(error, message));
    }

    /** "limit must be between 1 and 1000 (got 0)": one clause per failed parameter. */
    static String describe(Map<String, List<ValidationError<Object>>> errors) {
        return errors.entrySet().stream()
                .flatMap(e -> e.getValue().stream().map(err -> clause(e.getKey(), err)))
                .collect(Collectors.joining("; "));
    }

    private static String clause(String parameter, ValidationError<Object> error) {
        // Every typed parameter of this API is a whole number, so a failed conversion means "not one".
        String what = TYPE_CONVERSION_FAILED.equals(error.getMessage()) ? "must be a whole number" : error.getMessage();
        return parameter + " " + what + " (got '" + error.getValue() + "')";
    }
}
