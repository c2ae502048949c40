package io.llmprof.agent.replay;

import io.llmprof.agent.kineto.ReadProgress;
import java.io.PrintStream;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Replay progress on stderr: a bar redrawn in place on a terminal, else one status line every few seconds
 * (logs and CI output must not fill with carriage returns).
 */
final class Progress {
    enum Mode {
        OFF,
        BAR,
        LINES
    }

    private final Mode mode;
    private final PrintStream out;
    private final long totalBytes;
    private final long startNanos = System.nanoTime();
    /** Input bytes read (the MB/s). */
    final AtomicLong bytes = new AtomicLong();

    /** Of {@code totalBytes}, how much is done (the bar): bytes read, with interleaved lanes in the share sent. */
    final AtomicLong done = new AtomicLong();

    final AtomicLong events = new AtomicLong();
    private long lastLineNanos = startNanos;
    private final long lineIntervalNanos;
    private volatile java.util.function.Supplier<java.time.Duration> waiting = () -> java.time.Duration.ZERO;

    Progress(Mode mode, PrintStream out, long totalBytes, long lineIntervalNanos) {
        this.mode = mode;
        this.out = out;
        this.totalBytes = Math.max(totalBytes, 1);
        this.lineIntervalNanos = lineIntervalNanos;
    }

    /** How long the producer has waited for Kafka without an acknowledgement (shown from 2 s on). */
    void waiting(java.util.function.Supplier<java.time.Duration> w) {
        this.waiting = w;
    }

    static Mode defaultMode(boolean enabled) {
        if (!enabled) {
            return Mode.OFF;
        }
        return System.console() != null ? Mode.BAR : Mode.LINES;
    }

    /**
     * One file's listener. Without interleaving, the file is done as it is read. With it, the events read are not all
     * sent yet (the lane that runs ahead waits for the other), so the bytes read count in the share of the events read
     * that were passed on: the bar follows what was sent, through a paced replay too, and reaches the file's end when
     * the last queued event goes.
     */
    ReadProgress file(long size, boolean interleaved) {
        return new ReadProgress() {
            private long read;
            private long fileDone;
            private double sentShare = interleaved ? 0 : 1;

            @Override
            public void inputBytes(long consumed) {
                bytes.addAndGet(consumed - read);
                read = consumed;
                update();
            }

            @Override
            public void passedOn(long passedOn, long total) {
                sentShare = total <= 0 ? 1 : Math.min(1, (double) passedOn / total);
                update();
            }

            private void update() {
                long value = (long) (Math.min(read, size) * sentShare);
                if (value > fileDone) {
                    done.addAndGet(value - fileDone);
                    fileDone = value;
                }
            }
        };
    }

    /** Called periodically by a timer thread. */
    synchronized void tick() {
        long now = System.nanoTime();
        switch (mode) {
            case OFF -> {}
            case BAR -> {
                out.print("\r" + render(now));
                out.flush();
            }
            case LINES -> {
                if (now - lastLineNanos >= lineIntervalNanos) {
                    lastLineNanos = now;
                    out.println("llmprof agent replay: " + render(now));
                }
            }
        }
    }

    synchronized void done() {
        if (mode == Mode.OFF) {
            return;
        }
        String line = render(System.nanoTime());
        if (mode == Mode.BAR) {
            out.println("\r" + line);
        } else {
            out.println("llmprof agent replay: " + line);
        }
        out.flush();
    }

    String render(long now) {
        double seconds = Math.max((now - startNanos) / 1e9, 1e-9);
        long b = bytes.get();
        double fraction = Math.min(1.0, (double) done.get() / totalBytes);
        int width = 30;
        int filled = (int) Math.round(fraction * width);
        java.time.Duration w = waiting.get();
        String wait = w.compareTo(io.llmprof.agent.produce.TraceProducer.WAITING_NOTICE) >= 0
                ? " waiting for Kafka (" + w.toSeconds() + " s)"
                : "";
        return String.format(
                Locale.ROOT,
                "[%s%s] %3.0f%% %,d events %,.0f events/s %.1f MB/s%s",
                "#".repeat(filled),
                " ".repeat(width - filled),
                fraction * 100,
                events.get(),
                events.get() / seconds,
                b / 1e6 / seconds,
                wait);
    }
}
