package io.llmprof.dashboard.live;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One connected stream: a bounded queue the hub offers to (never blocking) and the stream's own writer
 * thread takes from. Ending it (overflow, hub closed, client gone) wakes the writer and runs the abort hook,
 * which the HTTP layer sets to drop the connection of a writer stuck on a slow socket.
 */
public final class LiveClient {
    private static final LiveEvent END = new LiveEvent("end", "");

    private final LiveHub hub;
    private final BlockingQueue<LiveEvent> queue;
    private final AtomicBoolean ended = new AtomicBoolean();
    private volatile String endReason;
    private volatile Runnable abort = () -> {};

    LiveClient(LiveHub hub, int capacity) {
        this.hub = hub;
        this.queue = new ArrayBlockingQueue<>(capacity);
    }

    /**
     * The next event to send, waiting up to {@code wait}: empty when nothing came (send a keep-alive), or
     * when the stream has ended ({@link #ended()} tells which).
     */
    public Optional<LiveEvent> next(Duration wait) throws InterruptedException {
        if (ended.get()) {
            return Optional.empty();
        }
        LiveEvent event = queue.poll(wait.toNanos(), TimeUnit.NANOSECONDS);
        if (event == null || event == END) {
            return Optional.empty();
        }
        return Optional.of(event);
    }

    public boolean ended() {
        return ended.get();
    }

    /** Why the stream ended ("overflow", "closed", "disconnected"); null while it runs. */
    public String endReason() {
        return endReason;
    }

    /** Run once when the hub ends this client for overflow; the HTTP layer closes the connection in it. */
    public void onAbort(Runnable hook) {
        this.abort = hook == null ? () -> {} : hook;
    }

    /** The client went away (or its writer stopped): leaves the hub, frees its slot. */
    public void disconnect() {
        end("disconnected", false);
    }

    /** False when the queue is full or the client has ended: the caller then ends it. Never blocks. */
    boolean offer(LiveEvent event) {
        return !ended.get() && queue.offer(event);
    }

    /** Ends the stream: the writer wakes at once; {@code abort} also drops the connection. */
    void end(String reason, boolean abortConnection) {
        if (!ended.compareAndSet(false, true)) {
            return;
        }
        endReason = reason;
        queue.clear();
        queue.offer(END);
        hub.remove(this);
        if (abortConnection) {
            abort.run();
        }
    }
}
