package io.llmprof.agent.cli;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * While open, Ctrl-C (or a SIGTERM) runs {@code stop} and holds the JVM's exit, up to a bound, until {@link #close()}:
 * a command that stops at its first unacknowledged batch then still writes its checkpoint and prints its report, and
 * the demo closes what it started.
 */
public final class CtrlC implements AutoCloseable {
    private final CountDownLatch reported = new CountDownLatch(1);
    private final Thread hook;

    private CtrlC(Runnable stop, String name, Duration wait) {
        hook = new Thread(
                () -> {
                    stop.run();
                    try {
                        reported.await(wait.toMillis(), TimeUnit.MILLISECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                },
                name);
        Runtime.getRuntime().addShutdownHook(hook);
    }

    /** Holds the exit up to 20 s (the agent's shipping commands). */
    static CtrlC stops(Runnable stop, String name) {
        return stops(stop, name, Duration.ofSeconds(20));
    }

    /** Holds the exit up to {@code wait}. */
    public static CtrlC stops(Runnable stop, String name, Duration wait) {
        return new CtrlC(stop, name, wait);
    }

    /** The command is done (its report out, what it started closed): the JVM may exit. */
    @Override
    public void close() {
        reported.countDown();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
            // the hook is running: it waited for this report
        }
    }
}
