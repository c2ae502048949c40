package io.llmprof.dashboard.api;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Json;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real Server-Sent Events client for tests: reads the response's lines on its own thread and hands out
 * events and comments, every wait with a deadline.
 */
final class SseStream implements AutoCloseable {
    private static final String END = "\u0000end";

    record Event(String name, String data) {
        JsonNode json() throws IOException {
            return Json.mapper().readTree(data);
        }
    }

    final int status;
    final String contentType;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final Stream<String> body;
    private final Thread reader;
    private volatile boolean ended;

    private SseStream(HttpResponse<Stream<String>> response) {
        this.status = response.statusCode();
        this.contentType = response.headers().firstValue("Content-Type").orElse("");
        this.body = response.body();
        this.reader = new Thread(
                () -> {
                    try {
                        body.forEach(lines::add);
                    } catch (RuntimeException e) {
                        // The connection was dropped: the same as the end of the stream for these tests.
                    } finally {
                        lines.add(END);
                    }
                },
                "sse-test-reader");
        reader.setDaemon(true);
        reader.start();
    }

    static SseStream open(TestHttp http, String path) throws IOException, InterruptedException {
        // No request timeout: the stream is meant to stay open; reads below have deadlines.
        HttpRequest request = HttpRequest.newBuilder(http.uri(path))
                .header("Accept", "text/event-stream")
                .build();
        return new SseStream(http.client.send(request, HttpResponse.BodyHandlers.ofLines()));
    }

    /** The next event, skipping comments; fails when none comes within {@code deadline} or the stream ends. */
    Event next(Duration deadline) throws InterruptedException {
        long until = System.nanoTime() + deadline.toNanos();
        String name = "message";
        StringBuilder data = null;
        while (true) {
            String line = poll(until);
            if (line.isEmpty()) {
                if (data != null) {
                    return new Event(name, data.toString());
                }
            } else if (line.startsWith(":")) {
                continue;
            } else if (line.startsWith("event:")) {
                name = line.substring("event:".length()).strip();
            } else if (line.startsWith("data:")) {
                String part = line.substring("data:".length()).strip();
                data = data == null
                        ? new StringBuilder(part)
                        : data.append('\n').append(part);
            }
        }
    }

    /** The next comment line (without its colon), skipping events. */
    String nextComment(Duration deadline) throws InterruptedException {
        long until = System.nanoTime() + deadline.toNanos();
        while (true) {
            String line = poll(until);
            if (line.startsWith(":")) {
                return line.substring(1).strip();
            }
        }
    }

    /** Waits until the server ends the stream; false when it is still open at the deadline. */
    boolean awaitEnd(Duration deadline) throws InterruptedException {
        long until = System.nanoTime() + deadline.toNanos();
        while (!ended) {
            long left = until - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            String line = lines.poll(left, TimeUnit.NANOSECONDS);
            if (END.equals(line)) {
                ended = true;
            }
        }
        return true;
    }

    private String poll(long until) throws InterruptedException {
        long left = until - System.nanoTime();
        String line = left <= 0 ? null : lines.poll(left, TimeUnit.NANOSECONDS);
        if (line == null) {
            throw new AssertionError("no server-sent event line within the deadline");
        }
        if (END.equals(line)) {
            ended = true;
            throw new AssertionError("the server ended the event stream");
        }
        return line;
    }

    @Override
    public void close() {
        body.close();
        reader.interrupt();
    }
}
