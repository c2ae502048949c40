package io.llmprof.agent.kineto;

import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;

/**
 * {@link KinetoReader#read} on a second thread: the reader tokenizes while the calling thread runs the sink (an
 * offline command's segmenters), so a two-core machine does both at once. The sink sees exactly the calls, in
 * exactly the order, that a plain read makes; only the thread differs (the caller's). Events travel in batches
 * through a small bounded queue, so memory stays bounded whatever the file size. {@link ReaderOptions#progress()}
 * is told from the reading thread.
 */
public final class PipelinedRead {
    private static final int BATCH = 2048;
    /** Batches in flight (queued or being filled): bounds the hand-off's memory. */
    private static final int IN_FLIGHT = 8;

    private PipelinedRead() {}

    /** What reads a file to a sink on the reading thread: {@link KinetoReader#read}, or a reader wrapping it. */
    @FunctionalInterface
    public interface Source {
        ReadSummary read(Path file, ReaderOptions options, OrderedSink sink) throws IOException;
    }

    /**
     * Reads one trace file to the sink, which runs on the calling thread.
     *
     * @throws IOException as {@link KinetoReader#read} does; {@link InterruptedIOException} when the calling
     *     thread is interrupted (the reading thread is then stopped)
     */
    public static ReadSummary read(Path file, ReaderOptions options, OrderedSink sink) throws IOException {
        return read(file, options, sink, KinetoReader::read);
    }

    /** As {@link #read(Path, ReaderOptions, OrderedSink)}, with {@code source} reading the file. */
    public static ReadSummary read(Path file, ReaderOptions options, OrderedSink sink, Source source)
            throws IOException {
        Objects.requireNonNull(sink, "sink");
        Objects.requireNonNull(source, "source");
        HandOff handOff = new HandOff();
        Thread reader = new Thread(() -> handOff.run(file, options, source), "kineto-reader");
        reader.setDaemon(true);
        reader.start();
        boolean done = false;
        try {
            while (true) {
                Batch b = handOff.full.take();
                b.deliver(sink);
                if (b.last) {
                    done = true;
                    return handOff.result();
                }
                b.clear();
                handOff.empty.put(b);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while reading " + file);
        } finally {
            if (!done) {
                reader.interrupt(); // the sink failed or we were interrupted: the reader must not block forever
            }
        }
    }

    private static final byte EVENT = 0;
    private static final byte END_OF_TRACE = 1;
    private static final byte PROBLEM = 2;

    /** A run of sink calls, as parallel arrays (no holder object per event). */
    private static final class Batch {
        final byte[] types = new byte[BATCH];
        final String[] ranks = new String[BATCH];
        final Lane[] lanes = new Lane[BATCH];
        final long[] indexes = new long[BATCH];
        final Object[] payloads = new Object[BATCH];
        int size;
        boolean last;

        boolean add(byte type, String rank, Lane lane, long index, Object payload) {
            types[size] = type;
            ranks[size] = rank;
            lanes[size] = lane;
            indexes[size] = index;
            payloads[size] = payload;
            return ++size == BATCH;
        }

        void deliver(OrderedSink sink) {
            for (int i = 0; i < size; i++) {
                switch (types[i]) {
                    case EVENT -> sink.event(ranks[i], lanes[i], indexes[i], (TraceEvent) payloads[i]);
                    case END_OF_TRACE -> sink.endOfTrace(ranks[i], lanes[i]);
                    default -> sink.problem((InputProblem) payloads[i]);
                }
            }
        }

        void clear() {
            java.util.Arrays.fill(ranks, 0, size, null);
            java.util.Arrays.fill(lanes, 0, size, null);
            java.util.Arrays.fill(payloads, 0, size, null);
            size = 0;
        }
    }

    /** The reading thread's sink: fills batches and queues them. */
    private static final class HandOff implements OrderedSink {
        final BlockingQueue<Batch> full = new ArrayBlockingQueue<>(IN_FLIGHT);
        final BlockingQueue<Batch> empty = new ArrayBlockingQueue<>(IN_FLIGHT);
        private Batch current = new Batch();
        private volatile ReadSummary summary;
        private volatile Throwable failure;

        HandOff() {
            for (int i = 1; i < IN_FLIGHT; i++) {
                empty.add(new Batch());
            }
        }

        void run(Path file, ReaderOptions options, Source source) {
            try {
                summary = source.read(file, options, this);
            } catch (IOException | RuntimeException | Error e) {
                failure = e;
            } finally {
                current.last = true;
                // The consumer takes every batch it was given before this one, so a slot is free unless it has
                // stopped taking (it failed or was interrupted): then nobody waits for this batch.
                full.offer(current);
            }
        }

        ReadSummary result() throws IOException {
            Throwable f = failure;
            if (f instanceof IOException io) {
                throw io;
            }
            if (f instanceof RuntimeException re) {
                throw re;
            }
            if (f instanceof Error err) {
                throw err;
            }
            return summary;
        }

        @Override
        public void event(String rank, Lane lane, long index, TraceEvent event) {
            if (current.add(EVENT, rank, lane, index, event)) {
                handOver();
            }
        }

        @Override
        public void endOfTrace(String rank, Lane lane) {
            if (current.add(END_OF_TRACE, rank, lane, 0, null)) {
                handOver();
            }
        }

        @Override
        public void problem(InputProblem problem) {
            if (current.add(PROBLEM, null, null, 0, problem)) {
                handOver();
            }
        }

        private void handOver() {
            try {
                full.put(current);
                current = empty.take();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new UncheckedIOException(new InterruptedIOException("reader stopped: the consumer has gone"));
            }
        }
    }
}
