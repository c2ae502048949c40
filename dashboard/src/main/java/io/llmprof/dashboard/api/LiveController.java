package io.llmprof.dashboard.api;

import io.javalin.http.Context;
import io.javalin.http.sse.SseClient;
import io.javalin.http.sse.SseHandler;
import io.llmprof.dashboard.live.LiveClient;
import io.llmprof.dashboard.live.LiveEvent;
import io.llmprof.dashboard.live.LiveHub;
import java.io.IOException;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code GET /api/live}: one Server-Sent Events stream per page. Each stream's writer runs on its own thread
 * (Javalin's async executor, at most {@code maxClients} of them) and takes from its client's bounded queue,
 * so a slow socket blocks only itself; the hub ends a client that falls behind and its connection is dropped.
 */
final class LiveController {
    private static final Logger LOG = LoggerFactory.getLogger(LiveController.class);
    static final String EVENT_STREAM = "text/event-stream";
    private static final String KEEP_ALIVE = "keep-alive";

    private final LiveHub hub;

    LiveController(LiveHub hub) {
        this.hub = hub;
    }

    void live(Context ctx) throws Exception {
        // Javalin's SSE handler answers nothing without this header; say why instead of hanging.
        if (!EVENT_STREAM.equals(ctx.header("Accept"))) {
            throw ApiException.notAcceptable(
                    "not_event_stream",
                    "GET /api/live is a Server-Sent Events stream: send 'Accept: text/event-stream' (an EventSource"
                            + " does)");
        }
        Optional<LiveClient> subscribed = hub.subscribe();
        if (subscribed.isEmpty()) {
            throw ApiException.unavailable(
                    "too_many_clients",
                    "the dashboard already serves " + hub.config().maxClients()
                            + " live streams (or is closing); retry later");
        }
        LiveClient client = subscribed.get();
        try {
            new SseHandler(0, sse -> stream(sse, client)).handle(ctx);
        } catch (RuntimeException e) {
            client.disconnect();
            throw e;
        }
    }

    private void stream(SseClient sse, LiveClient client) {
        client.onAbort(() -> abort(sse.ctx()));
        sse.onClose(client::disconnect);
        try {
            while (!sse.terminated()) {
                Optional<LiveEvent> next = client.next(hub.config().keepAlive());
                if (client.ended()) {
                    break;
                }
                if (next.isPresent()) {
                    sse.sendEvent(next.get().name(), next.get().data());
                    hub.sent(next.get());
                } else {
                    sse.sendComment(KEEP_ALIVE);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            client.disconnect();
            LOG.debug("live stream ended: {}", client.endReason());
        }
    }

    /** Drops the connection under a writer that may be blocked on a full socket (a write then fails). */
    private static void abort(Context ctx) {
        try {
            org.eclipse.jetty.server.Request base = org.eclipse.jetty.server.Request.getBaseRequest(ctx.req());
            if (base != null) {
                base.getHttpChannel().getEndPoint().close();
            } else {
                ctx.res().getOutputStream().close();
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("closing a slow live stream failed: {}", e.toString());
        }
    }
}
