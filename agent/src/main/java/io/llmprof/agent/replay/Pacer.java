package io.llmprof.agent.replay;

import io.llmprof.agent.produce.TraceShipper.BatchGate;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceBatch.Lane;
import java.util.function.LongSupplier;

/**
 * Maps trace time to wall time for one file. The GPU lane is paced: it is what the analysis segments. Host
 * batches are not: with lanes interleaved by time (the default) the batcher sends a rank's host events read so
 * far just before each GPU batch, so they follow the GPU's pace; with {@code --host-first} (Kineto writes the
 * GPU lane after every host event) pacing the host lane would hold all kernels back until the host events had
 * been replayed. The analysis needs step markers and launches before the kernels they enclose anyway.
 */
final class Pacer implements BatchGate {
    /** Sleeps; tests pass one that advances a fake clock. */
    @FunctionalInterface
    interface Sleeper {
        void sleepNanos(long nanos) throws InterruptedException;
    }

    private final Speed speed;
    private final LongSupplier nanoClock;
    private final Sleeper sleeper;
    private long traceOrigin = Long.MIN_VALUE;
    private long wallOrigin;

    Pacer(Speed speed, LongSupplier nanoClock, Sleeper sleeper) {
        this.speed = speed;
        this.nanoClock = nanoClock;
        this.sleeper = sleeper;
    }

    static Pacer realTime(Speed speed) {
        return new Pacer(speed, System::nanoTime, nanos -> {
            long ms = nanos / 1_000_000;
            Thread.sleep(ms, (int) (nanos % 1_000_000));
        });
    }

    @Override
    public void beforeSend(TraceBatch batch) throws InterruptedException {
        if (speed.isMax() || batch.lane() != Lane.GPU || batch.events().isEmpty()) {
            return;
        }
        // A batch leaves when its last event has started in paced trace time.
        long traceNs = batch.events().get(batch.events().size() - 1).startNs();
        if (traceOrigin == Long.MIN_VALUE) {
            traceOrigin = batch.events().get(0).startNs();
            wallOrigin = nanoClock.getAsLong();
        }
        long dueWall = wallOrigin + (long) ((traceNs - traceOrigin) / speed.factor());
        long wait = dueWall - nanoClock.getAsLong();
        if (wait > 0) {
            sleeper.sleepNanos(wait);
        }
    }
}
