package io.llmprof.dashboard.api;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Json;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** GETs against a started Javalin on 127.0.0.1, every call with a deadline. */
final class TestHttp {
    static final Duration DEADLINE = Duration.ofSeconds(10);

    final HttpClient client = HttpClient.newBuilder().connectTimeout(DEADLINE).build();
    private final int port;

    TestHttp(int port) {
        this.port = port;
    }

    URI uri(String path) {
        return URI.create("http://127.0.0.1:" + port + path);
    }

    Response get(String path) throws IOException, InterruptedException {
        HttpResponse<String> response = client.send(
                HttpRequest.newBuilder(uri(path)).timeout(DEADLINE).build(), HttpResponse.BodyHandlers.ofString());
        String contentType = response.headers().firstValue("Content-Type").orElse("");
        JsonNode json =
                contentType.startsWith("application/json") ? Json.mapper().readTree(response.body()) : null;
        return new Response(response.statusCode(), contentType, response.body(), json);
    }

    /** The response headers of a GET (the security headers every answer carries). */
    java.net.http.HttpHeaders headers(String path) throws IOException, InterruptedException {
        return client.send(
                        HttpRequest.newBuilder(uri(path)).timeout(DEADLINE).build(),
                        HttpResponse.BodyHandlers.discarding())
                .headers();
    }

    record Response(int status, String contentType, String body, JsonNode json) {}
}
