package io.llmprof.deploy.logging;

import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.slf4j.ILoggerFactory;
import org.slf4j.Logger;

/** Wraps each logger of a delegate factory in a {@link ConsoleLogger}, once per name. */
final class ConsoleLoggerFactory implements ILoggerFactory {
    private final ILoggerFactory delegate;
    private final RetriedConditions retried;
    private final boolean stackTraces;
    private final RepeatedLines repeats;
    private final ConcurrentMap<String, Logger> loggers = new ConcurrentHashMap<>();

    ConsoleLoggerFactory(ILoggerFactory delegate, RetriedConditions retried, boolean stackTraces) {
        this(delegate, retried, stackTraces, new RepeatedLines(System::nanoTime));
    }

    ConsoleLoggerFactory(
            ILoggerFactory delegate, RetriedConditions retried, boolean stackTraces, RepeatedLines repeats) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
        this.retried = Objects.requireNonNull(retried, "retried");
        this.stackTraces = stackTraces;
        this.repeats = Objects.requireNonNull(repeats, "repeats");
    }

    @Override
    public Logger getLogger(String name) {
        return loggers.computeIfAbsent(
                name, n -> new ConsoleLogger(delegate.getLogger(n), retried.forLogger(n), stackTraces, repeats));
    }
}
