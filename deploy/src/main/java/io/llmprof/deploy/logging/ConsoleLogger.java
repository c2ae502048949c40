package io.llmprof.deploy.logging;

import io.llmprof.agent.produce.ProducerRetries;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.Marker;
import org.slf4j.event.Level;
import org.slf4j.helpers.LegacyAbstractLogger;
import org.slf4j.helpers.MessageFormatter;

/**
 * A logger in front of slf4j-simple's: a line matching a {@link RetriedConditions} rule goes to DEBUG as one line,
 * and a throwable prints as one line ({@code message (Exception: cause; caused by ...)}) unless stack traces were
 * asked for. Kafka's producer I/O thread's WARN lines (its retries) go to {@link ProducerRetries} and to DEBUG. WARN and
 * ERROR lines of loggers outside llmprof show once per shape and window ({@link RepeatedLines}); the repeats go to
 * DEBUG. Levels are the delegate's.
 */
final class ConsoleLogger extends LegacyAbstractLogger {
    /** System property that keeps stack traces in the console (the launcher sets it from {@code LLMPROF_DEBUG=1}). */
    static final String STACK_TRACES_PROPERTY = "llmprof.log.stackTraces";

    private static final long serialVersionUID = 1L;
    /** Causes named in a one-line throwable summary, so a loop in a cause chain cannot run on. */
    private static final int MAX_CAUSES = 4;

    private final transient Logger delegate;
    private final transient RetriedConditions retried;
    private final boolean stackTraces;
    /** Kafka's producer I/O thread, whose WARN lines are retries that {@link ProducerRetries} keeps. */
    private final boolean sender;
    /** Repeats of Kafka's (and other libraries') WARN and ERROR lines; null for llmprof's own loggers. */
    private final transient RepeatedLines repeats;

    ConsoleLogger(Logger delegate, RetriedConditions retried, boolean stackTraces, RepeatedLines repeats) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
        this.retried = Objects.requireNonNull(retried, "retried");
        this.stackTraces = stackTraces;
        this.name = delegate.getName();
        this.sender = ProducerRetries.SENDER_LOGGER.equals(name);
        this.repeats = name.startsWith("io.llmprof.") ? null : repeats;
    }

    @Override
    public boolean isTraceEnabled() {
        return delegate.isTraceEnabled();
    }

    @Override
    public boolean isDebugEnabled() {
        return delegate.isDebugEnabled();
    }

    @Override
    public boolean isInfoEnabled() {
        return delegate.isInfoEnabled();
    }

    @Override
    public boolean isWarnEnabled() {
        return delegate.isWarnEnabled();
    }

    @Override
    public boolean isErrorEnabled() {
        return delegate.isErrorEnabled();
    }

    @Override
    protected String getFullyQualifiedCallerName() {
        return null;
    }

    @Override
    protected void handleNormalizedLoggingCall(
            Level level, Marker marker, String pattern, Object[] args, Throwable throwable) {
        String message = MessageFormatter.basicArrayFormat(pattern, args);
        if (sender && level == Level.WARN) {
            // The producer's retries: every backoff, mostly a leader moving. The agent's "waiting for Kafka" line
            // names the last one once a wait lasts (ProducerRetries); here they show at DEBUG only.
            ProducerRetries.heardFromSender(message);
            if (delegate.isDebugEnabled()) {
                delegate.debug("{}{}", message, throwable == null ? "" : " (" + oneLine(throwable) + ")");
            }
            return;
        }
        if (level.toInt() >= Level.WARN.toInt() && retried.matches(throwable, message)) {
            if (delegate.isDebugEnabled()) {
                delegate.debug(
                        "{} ({}recovered by Kafka, nothing lost)",
                        message,
                        throwable == null ? "" : oneLine(throwable) + "; ");
            }
            return;
        }
        if (repeats != null && level.toInt() >= Level.WARN.toInt()) {
            // the line as shown, its cause included: the same text with another exception is another line
            String line = throwable == null ? message : message + " (" + oneLine(throwable) + ")";
            String shown = repeats.show(name, line);
            if (shown == null) {
                if (delegate.isDebugEnabled()) {
                    delegate.debug(line);
                }
                return;
            }
            if (throwable == null || !stackTraces) {
                emit(level, shown, null);
                return;
            }
        }
        if (throwable != null && !stackTraces) {
            emit(level, message + " (" + oneLine(throwable) + ")", null);
        } else {
            emit(level, message, throwable);
        }
    }

    private void emit(Level level, String message, Throwable throwable) {
        switch (level) {
            case ERROR -> delegate.error(message, throwable);
            case WARN -> delegate.warn(message, throwable);
            case INFO -> delegate.info(message, throwable);
            case DEBUG -> delegate.debug(message, throwable);
            case TRACE -> delegate.trace(message, throwable);
        }
    }

    /** {@code Exception: message; caused by Cause: message}, at most {@value #MAX_CAUSES} causes. */
    static String oneLine(Throwable t) {
        StringBuilder b = new StringBuilder();
        Throwable c = t;
        for (int i = 0; c != null && i <= MAX_CAUSES; i++) {
            if (i > 0) {
                b.append("; caused by ");
            }
            String simple = c.getClass().getSimpleName();
            b.append(simple.isEmpty() ? c.getClass().getName() : simple);
            if (c.getMessage() != null) {
                b.append(": ").append(c.getMessage().replace('\n', ' '));
            }
            c = c.getCause() == c ? null : c.getCause();
        }
        return b.toString();
    }
}
