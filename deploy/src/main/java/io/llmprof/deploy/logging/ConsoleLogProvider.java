package io.llmprof.deploy.logging;

import org.slf4j.ILoggerFactory;
import org.slf4j.IMarkerFactory;
import org.slf4j.simple.SimpleServiceProvider;
import org.slf4j.spi.MDCAdapter;
import org.slf4j.spi.SLF4JServiceProvider;

/**
 * The SLF4J provider the launcher selects ({@code -Dslf4j.provider=io.llmprof.deploy.logging.ConsoleLogProvider}):
 * slf4j-simple's console format and levels, with every logger wrapped in a {@link ConsoleLogger} so that conditions
 * Kafka retries by itself go to debug and a throwable prints as one line unless stack traces are asked for
 * ({@value ConsoleLogger#STACK_TRACES_PROPERTY}=true, set by the launcher from {@code LLMPROF_DEBUG=1}).
 *
 * <p>Chosen by a system property rather than a {@code META-INF/services} entry: two registered providers make SLF4J
 * warn and pick one by class-path order.
 */
public final class ConsoleLogProvider implements SLF4JServiceProvider {
    private final SimpleServiceProvider simple = new SimpleServiceProvider();
    private volatile ILoggerFactory factory;

    @Override
    public ILoggerFactory getLoggerFactory() {
        return factory;
    }

    @Override
    public IMarkerFactory getMarkerFactory() {
        return simple.getMarkerFactory();
    }

    @Override
    public MDCAdapter getMDCAdapter() {
        return simple.getMDCAdapter();
    }

    @Override
    public String getRequestedApiVersion() {
        return simple.getRequestedApiVersion();
    }

    @Override
    public void initialize() {
        simple.initialize();
        factory = new ConsoleLoggerFactory(
                simple.getLoggerFactory(),
                RetriedConditions.DEFAULT,
                Boolean.getBoolean(ConsoleLogger.STACK_TRACES_PROPERTY));
    }
}
