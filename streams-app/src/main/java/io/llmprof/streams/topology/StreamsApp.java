package io.llmprof.streams.topology;

import io.llmprof.events.TopicBootstrap;
import io.llmprof.streams.health.StreamsHealth;
import io.llmprof.streams.metrics.StreamsMeters;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.kafka.KafkaStreamsMetrics;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.micrometer.core.instrument.config.MeterFilter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running streams app: the one-JVM demo and {@code llmprof streams} start it through {@link #start}.
 * Closing it closes Kafka Streams and unbinds its metrics; a state directory it created itself is deleted.
 */
public final class StreamsApp implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StreamsApp.class);
    private static final Set<KafkaStreams.State> TERMINAL =
            Set.of(KafkaStreams.State.PENDING_SHUTDOWN, KafkaStreams.State.NOT_RUNNING, KafkaStreams.State.ERROR);

    private final KafkaStreams streams;
    private final KafkaStreamsMetrics metrics;
    private final Path ownStateDir;
    private final StreamsHealth health;
    private final Object stateLock = new Object();
    /** Active tasks at the last RUNNING, so a rebalance can say what this instance took over or handed on. */
    private Set<String> activeTasks = Set.of();

    private StreamsApp(KafkaStreams streams, KafkaStreamsMetrics metrics, Path ownStateDir, StreamsHealth health) {
        this.streams = streams;
        this.metrics = metrics;
        this.ownStateDir = ownStateDir;
        this.health = health;
    }

    /**
     * Creates llmprof's topics when missing, builds the topology and starts Kafka Streams. Returns once
     * started, not once running: see {@link #awaitRunning}.
     */
    public static StreamsApp start(StreamsAppConfig config, MeterRegistry registry) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(registry, "registry");
        StreamsMeters meters = new StreamsMeters(registry);
        // First: a bad --config / --profile fails here at once, not after waiting for a broker.
        Topology topology = TopologyFactory.build(config, meters);
        TopicBootstrap.Applied applied = TopicBootstrap.ensureTopics(config.kafka(), config.topics());
        Path ownStateDir = null;
        // The internal topics get the replication factor and min.insync found for llmprof's own.
        StreamsAppConfig effective = config.toBuilder()
                .topics(config.topics()
                        .withReplicationFactor(applied.replicationFactor())
                        .withMinInsyncReplicas(applied.minInsyncReplicas()))
                .build();
        if (config.stateDir() == null) {
            try {
                ownStateDir = Files.createTempDirectory("llmprof-streams-");
            } catch (IOException e) {
                throw new UncheckedIOException("cannot create a temporary state directory", e);
            }
            effective = effective.toBuilder().stateDir(ownStateDir).build();
        }
        KafkaStreams streams;
        try {
            streams = new KafkaStreams(topology, TopologyFactory.streamsProperties(effective, meters));
        } catch (RuntimeException e) {
            if (ownStateDir != null) {
                deleteRecursively(ownStateDir);
            }
            throw e;
        }
        StreamsHealth health = new StreamsHealth(
                System::nanoTime,
                config.effectiveMaxRebalancing(),
                StreamsHealth.DEFAULT_MAX_DEATHS,
                StreamsHealth.DEFAULT_DEATH_WINDOW);
        streams.setUncaughtExceptionHandler(e -> {
            // Record-level errors never get here (they are dead-lettered); this is a bug or an outage. One line: a
            // crash loop would otherwise fill the log with the same stack trace every few seconds.
            String thread = Thread.currentThread().getName();
            health.threadDied(thread, e);
            meters.threadDied();
            LOG.error(
                    "stream thread {} died ({} so far), replacing it: {}", thread, health.threadDeaths(), describe(e));
            LOG.debug("stream thread {} died of", thread, e);
            return StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        KafkaStreamsMetrics metrics = new KafkaStreamsMetrics(streams);
        StreamsApp app = new StreamsApp(streams, metrics, ownStateDir, health);
        streams.setStateListener((newState, oldState) -> {
            LOG.info("streams app {} -> {}", oldState, newState);
            if (newState == KafkaStreams.State.RUNNING) {
                app.logAssignment();
            }
            int replaced = health.stateChanged(newState);
            if (replaced > 0) {
                meters.threadsReplaced(replaced);
                LOG.info("streams app RUNNING again: {} dead stream thread(s) replaced", replaced);
            }
            synchronized (app.stateLock) {
                app.stateLock.notifyAll();
            }
        });
        metrics.bindTo(kafkaStreamsMeters(registry, config.streamsProperties()));
        try {
            streams.start();
        } catch (RuntimeException e) {
            app.close(Duration.ofSeconds(10));
            throw e;
        }
        LOG.info(
                "streams app {} started against {} (state dir {})",
                effective.effectiveApplicationId(),
                effective.kafka(),
                effective.stateDir());
        return app;
    }

    /**
     * Says which tasks (and their input partitions) this instance took over and handed on in the rebalance that
     * just ended: after an instance dies, its partitions move to the others, and the log shows when (issue 18).
     */
    private synchronized void logAssignment() {
        Set<String> now = new TreeSet<>();
        Set<String> partitions = new TreeSet<>();
        try {
            for (ThreadMetadata t : streams.metadataForLocalThreads()) {
                for (TaskMetadata task : t.activeTasks()) {
                    now.add(task.taskId().toString());
                    task.topicPartitions().forEach(tp -> partitions.add(tp.toString()));
                }
            }
        } catch (RuntimeException e) { // the state moved on meanwhile: the next RUNNING says it
            return;
        }
        Set<String> taken = new TreeSet<>(now);
        taken.removeAll(activeTasks);
        Set<String> handed = new TreeSet<>(activeTasks);
        handed.removeAll(now);
        if (!taken.isEmpty()) {
            LOG.info(
                    "took over {} task(s) {}; {} active on this instance, reading {}",
                    taken.size(),
                    taken,
                    now.size(),
                    partitions);
        }
        if (!handed.isEmpty()) {
            LOG.info(
                    "handed {} task(s) {} to other instances; {} active on this instance, reading {}",
                    handed.size(),
                    handed,
                    now.size(),
                    partitions);
        }
        activeTasks = Set.copyOf(now);
    }

    public KafkaStreams.State state() {
        return streams.state();
    }

    /** UP or DOWN with the reason: see {@link StreamsHealth}. */
    public StreamsHealth.Status health() {
        return health.status();
    }

    /** The exception and its innermost cause, without a stack trace. */
    private static String describe(Throwable e) {
        Throwable root = e;
        for (int i = 0; i < 16 && root.getCause() != null && root.getCause() != root; i++) {
            root = root.getCause();
        }
        return root == e ? e.toString() : e.getClass().getSimpleName() + " caused by " + root;
    }

    /**
     * Waits until Kafka Streams is RUNNING.
     *
     * @return true when running, false when the timeout passed first
     * @throws IllegalStateException when the app stopped or failed instead
     */
    public boolean awaitRunning(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (stateLock) {
            while (true) {
                KafkaStreams.State s = streams.state();
                if (s == KafkaStreams.State.RUNNING) {
                    return true;
                }
                if (TERMINAL.contains(s)) {
                    throw new IllegalStateException("streams app is " + s + ", it will not run");
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                // Bounded wait: the listener notifies, the bound guards against a missed notification.
                stateLock.wait(Math.max(1, Math.min(Duration.ofNanos(left).toMillis(), 200)));
            }
        }
    }

    /**
     * Kafka Streams' per-state-store (RocksDB), per-task, per-processor-node and per-topic meters: a few hundred names
     * times every store and task. On the demo they were 2,602 of the 4,009 series of {@code /metrics}, and a scrape
     * cost the dashboard 64 ms of CPU (docs/benchmarks.md). No dashboard, alert or runbook step uses them.
     */
    static final List<String> DETAIL_PREFIXES =
            List.of("kafka.stream.state.", "kafka.stream.task.", "kafka.stream.processor.node.", "kafka.stream.topic.");

    /**
     * Where Kafka Streams' meters are bound: {@code registry} behind a filter that leaves out {@link
     * #DETAIL_PREFIXES}, unless {@code metrics.recording.level} asks for more than INFO (then every one, as Kafka
     * Streams records them). The client's and each stream thread's meters (alive threads, state, process, poll and
     * commit ratios) and those of its consumers and producers (lag) always go through. The filter sits on a composite
     * registry of its own, so it applies to these meters only, and is in place before any of them is registered.
     */
    static MeterRegistry kafkaStreamsMeters(MeterRegistry registry, Properties streamsProperties) {
        String level = streamsProperties.getProperty(StreamsConfig.METRICS_RECORDING_LEVEL_CONFIG, "INFO");
        if (!"INFO".equalsIgnoreCase(level.trim())) {
            return registry;
        }
        CompositeMeterRegistry scoped =
                new CompositeMeterRegistry(registry.config().clock());
        scoped.config().meterFilter(MeterFilter.deny(id -> isDetail(id.getName())));
        scoped.add(registry);
        return scoped;
    }

    static boolean isDetail(String meterName) {
        for (String prefix : DETAIL_PREFIXES) {
            if (meterName.startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Closes Kafka Streams (committing what was processed) and unbinds its metrics.
     *
     * @return true when Kafka Streams shut down within the timeout
     */
    public boolean close(Duration timeout) {
        boolean closed = streams.close(timeout);
        metrics.close();
        if (ownStateDir != null && closed) {
            // Only a directory this app created: a configured state dir keeps its state for a restart.
            deleteRecursively(ownStateDir);
        }
        return closed;
    }

    @Override
    public void close() {
        close(Duration.ofSeconds(30));
    }

    private static void deleteRecursively(Path dir) {
        try {
            Files.walkFileTree(dir, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Files.deleteIfExists(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                    Files.deleteIfExists(d);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            LOG.warn("could not delete temporary state directory {}", dir, e);
        }
    }
}
