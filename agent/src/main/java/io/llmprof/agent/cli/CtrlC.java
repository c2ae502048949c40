package io.llmprof.agent.cli;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * While open, Ctrl-C (or a SIGTERM) runs {@code stop} and holds the JVM's exit up to 20 s, until {@link #close()}: a
 * command that stops at its first unacknowledged batch then still writes its checkpoint and prints its report.
 */
final class CtrlC implements AutoCloseable {
    private final CountDownLatch reported = new CountDownLatch(1);
    private final Thread hook;

    private CtrlC(Runnable stop, String name) {
        hook = new Thread(
                () -> {
                    stop.run();
                    try {
                        reported.await(20, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                },
                name);
        Runtime.getRuntime().addShutdownHook(hook);
    }

    static CtrlC stops(Runnable stop, String name) {
        return new CtrlC(stop, name);
    }

    /** The report is out: the JVM may exit. */
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
