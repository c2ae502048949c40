package io.llmprof.dashboard;

import io.javalin.Javalin;
import io.javalin.http.Context;
import io.llmprof.events.access.ApiToken;
import java.util.Map;
import java.util.function.Predicate;

/** A Javalin before-handler that answers 401 to a guarded request without the right bearer token. */
public final class AccessGate {
    private AccessGate() {}

    /**
     * Installs the gate.
     *
     * @param guarded which paths need the token
     * @param refused called once per refused request (a counter)
     */
    public static void install(Javalin app, ApiToken token, Predicate<String> guarded, Runnable refused) {
        if (!token.required()) {
            return;
        }
        app.before(ctx -> {
            if (guarded.test(ctx.path()) && !token.accepts(ctx.header("Authorization"))) {
                refused.run();
                refuse(ctx);
            }
        });
    }

    private static void refuse(Context ctx) {
        ctx.header("WWW-Authenticate", ApiToken.challenge());
        ctx.status(401)
                .json(Map.of(
                        "error",
                        "this endpoint requires the API token: send Authorization: Bearer <token> (the value of "
                                + ApiToken.ENV + " or of --api-token-file where llmprof runs)"));
        ctx.skipRemainingHandlers();
    }
}
