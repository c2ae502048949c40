package io.llmprof.deploy.logging;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.produce.ProducerRetries;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.Marker;
import org.slf4j.event.Level;
import org.slf4j.helpers.LegacyAbstractLogger;
import org.slf4j.helpers.MessageFormatter;

class ConsoleLoggerTest {
    /** The broker's message for the retried transactions-v2 rejection, as Kafka 4.3 writes it. */
    private static final OutOfOrderSequenceException TXN_V2_REJECTION = new OutOfOrderSequenceException(
            "Invalid sequence number for producer 1 at offset 156 in partition llmprof.host-steps-0: 2 (incoming seq."
                    + " number). Expected sequence 0 for transactions v2 idempotent producer with no existing state.");

    record Line(Level level, String message, Throwable throwable) {}

    /** A delegate that records what reaches it, at a given least level. */
    static final class Recording extends LegacyAbstractLogger {
        private static final long serialVersionUID = 1L;
        final transient List<Line> lines = new ArrayList<>();
        final Level least;

        Recording(String name, Level least) {
            this.name = name;
            this.least = least;
        }

        private boolean on(Level l) {
            return l.toInt() >= least.toInt();
        }

        @Override
        public boolean isTraceEnabled() {
            return on(Level.TRACE);
        }

        @Override
        public boolean isDebugEnabled() {
            return on(Level.DEBUG);
        }

        @Override
        public boolean isInfoEnabled() {
            return on(Level.INFO);
        }

        @Override
        public boolean isWarnEnabled() {
            return on(Level.WARN);
        }

        @Override
        public boolean isErrorEnabled() {
            return on(Level.ERROR);
        }

        @Override
        protected String getFullyQualifiedCallerName() {
            return null;
        }

        @Override
        protected void handleNormalizedLoggingCall(Level l, Marker m, String p, Object[] a, Throwable t) {
            if (on(l)) {
                lines.add(new Line(l, MessageFormatter.basicArrayFormat(p, a), t));
            }
        }
    }

    private static Logger wrap(Recording delegate, boolean stackTraces) {
        return new ConsoleLoggerFactory(n -> delegate, RetriedConditions.DEFAULT, stackTraces)
                .getLogger(delegate.getName());
    }

    @Test
    void kafkasRepeatedLinesShowOncePerShapeAndWindowWithTheCountOfThoseLeftOff() {
        java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong();
        RepeatedLines repeats = new RepeatedLines(now::get);
        Recording network = new Recording("org.apache.kafka.clients.NetworkClient", Level.DEBUG);
        Recording ours = new Recording("io.llmprof.deploy.broker.EmbeddedKafka", Level.DEBUG);
        ConsoleLoggerFactory factory = new ConsoleLoggerFactory(
                n -> n.startsWith("io.") ? ours : network, RetriedConditions.DEFAULT, false, repeats);
        Logger kafka = factory.getLogger(network.getName());
        Logger llmprof = factory.getLogger(ours.getName());
        // a quorum that cannot form: the same line twice a second, with other correlation ids
        for (int i = 0; i < 5; i++) {
            now.set(i * 500_000_000L);
            kafka.error(
                    "[RaftManager id=1] Connection to node 2 (/127.0.0.1:19602) failed authentication, request {}",
                    150 + i);
            llmprof.warn("node 1 has waited 10 s for its controller quorum");
        }
        kafka.error("[RaftManager id=1] Unexpected error NETWORK_EXCEPTION in VOTE response");
        kafka.info("[RaftManager id=1] info lines are not held back");
        kafka.info("[RaftManager id=1] info lines are not held back");

        assertThat(network.lines.stream().filter(l -> l.level() == Level.ERROR).map(Line::message))
                .containsExactly(
                        "[RaftManager id=1] Connection to node 2 (/127.0.0.1:19602) failed authentication, request 150",
                        "[RaftManager id=1] Unexpected error NETWORK_EXCEPTION in VOTE response");
        assertThat(network.lines.stream().filter(l -> l.level() == Level.DEBUG)).hasSize(4); // the repeats, at DEBUG
        assertThat(network.lines.stream().filter(l -> l.level() == Level.INFO)).hasSize(2);
        assertThat(ours.lines).hasSize(5); // llmprof's own lines are never held back

        // a request dump with another identity hash each time (Kafka's raft send thread)
        kafka.error(
                "Failed to send: ClientRequest(callback=KafkaNetworkChannel$$Lambda$653/0x00007feda8381fc8@6ef60d36)");
        kafka.error(
                "Failed to send: ClientRequest(callback=KafkaNetworkChannel$$Lambda$653/0x00007feda8381fc8@1b2c3d4e)");
        assertThat(network.lines.stream().filter(l -> l.message().startsWith("Failed to send")))
                .extracting(Line::level)
                .containsExactly(Level.ERROR, Level.DEBUG);
        assertThat(RepeatedLines.shape("k", "a dead beef at 0x7f3a and 12")).isEqualTo("k a dead beef at NxN and N");
        // ids of other lengths in the middle of a long line do not move its head and tail
        String pad = "x".repeat(300);
        String tail = " callback=Lambda$653/0x00007f6b38380000@%s, destination=1, correlationId=%d,"
                + " clientId=raft-client-2, createdTimeMs=1795975365355, requestBuilder=FetchRequest$Builder@24be432c)";
        assertThat(RepeatedLines.shape("k", "head " + pad + tail.formatted("704dc551", 9)))
                .isEqualTo(RepeatedLines.shape("k", "head " + pad + tail.formatted("302af586", 13)));
        // the same line whether its cause is in the text or a throwable (Kafka logs both ways)
        kafka.error("[RaftManager id=1] send failed (IllegalStateException: boom)");
        kafka.error("[RaftManager id=1] send failed", new IllegalStateException("boom"));
        assertThat(network.lines.stream().filter(l -> l.message().startsWith("[RaftManager id=1] send failed")))
                .extracting(Line::level)
                .containsExactly(Level.ERROR, Level.DEBUG);

        now.set(31_000_000_000L); // the window has passed: shown again, with the count
        kafka.error(
                "[RaftManager id=1] Connection to node 2 (/127.0.0.1:19602) failed authentication, request {}", 912);
        assertThat(network.lines.get(network.lines.size() - 1).message())
                .isEqualTo(
                        "[RaftManager id=1] Connection to node 2 (/127.0.0.1:19602) failed authentication, request 912"
                                + " [4 more line(s) like this in the last 30 s not shown; LLMPROF_LOG_LEVEL=debug shows them]");
    }

    @Test
    void theBrokersRetriedTransactionalSequenceRejectionGoesToDebugAsOneLine() {
        Recording broker = new Recording("kafka.server.ReplicaManager", Level.DEBUG);
        wrap(broker, false)
                .error(
                        "[ReplicaManager broker=1] Error processing append operation on partition {}",
                        "x:llmprof.passes-0",
                        TXN_V2_REJECTION);

        assertThat(broker.lines).singleElement().satisfies(l -> {
            assertThat(l.level()).isEqualTo(Level.DEBUG);
            assertThat(l.throwable()).isNull();
            assertThat(l.message())
                    .contains("Error processing append operation on partition x:llmprof.passes-0")
                    .contains("OutOfOrderSequenceException")
                    .contains("recovered by Kafka, nothing lost")
                    .doesNotContain("\n");
        });
    }

    /** The broker's rejection of the batches in flight behind it, as Kafka 4.3 wrote it in `bench live`. */
    private static final OutOfOrderSequenceException IN_FLIGHT_BEHIND = new OutOfOrderSequenceException(
            "Out of order sequence number for producer 2 at offset 5 in partition llmprof.service-forwards-1: 4"
                    + " (incoming seq. number), 1 (current end sequence number)");

    @Test
    void theBatchesInFlightBehindARetriedRejectionGoToDebugToo() {
        Recording broker = new Recording("kafka.server.ReplicaManager", Level.DEBUG);
        wrap(broker, false)
                .error(
                        "[ReplicaManager broker=1] Error processing append operation on partition {}",
                        "x:llmprof.service-forwards-1",
                        IN_FLIGHT_BEHIND);

        assertThat(broker.lines).singleElement().satisfies(l -> {
            assertThat(l.level()).isEqualTo(Level.DEBUG);
            assertThat(l.message())
                    .contains("Out of order sequence number for producer 2")
                    .contains("recovered by Kafka, nothing lost")
                    .doesNotContain("\n");
        });
        // the same exception from another logger (a client that could not retry it) still shows
        Recording client = new Recording("org.apache.kafka.clients.producer.internals.Sender", Level.WARN);
        wrap(client, false).error("send failed", IN_FLIGHT_BEHIND);
        assertThat(client.lines).singleElement().extracting(Line::level).isEqualTo(Level.ERROR);
    }

    @Test
    void theProducersRetryLinesAreKeptForTheAgentAndShownAtDebugOnly() {
        Recording sender = new Recording(ProducerRetries.SENDER_LOGGER, Level.WARN);
        Logger log = wrap(sender, false);
        long before = System.nanoTime();
        // Sender.completeBatch's line, with LogContext's prefix as Kafka's own logger adds it
        log.warn(
                "[Producer clientId=console-test-1] Got error produce response with correlation id {} on"
                        + " topic-partition {}, retrying ({} attempts left). Error: {}",
                17,
                "llmprof.trace-events-2",
                2147483640,
                "NOT_ENOUGH_REPLICAS");
        assertThat(sender.lines).as("not printed at WARN").isEmpty();
        assertThat(ProducerRetries.last("console-test-1", before))
                .get()
                .extracting(ProducerRetries.Heard::reason)
                .isEqualTo("NOT_ENOUGH_REPLICAS on llmprof.trace-events-2");
        // the I/O thread's real errors still show
        log.error("[Producer clientId=console-test-1] Uncaught error in kafka producer I/O thread: ", new Error("x"));
        assertThat(sender.lines).singleElement().extracting(Line::level).isEqualTo(Level.ERROR);

        Recording atDebug = new Recording(ProducerRetries.SENDER_LOGGER, Level.DEBUG);
        wrap(atDebug, false).warn("[Producer clientId=console-test-2] Got error produce response ... Error: X");
        assertThat(atDebug.lines).singleElement().satisfies(l -> {
            assertThat(l.level()).isEqualTo(Level.DEBUG);
            assertThat(l.message()).contains("Got error produce response");
        });
        // another logger's WARN is not a producer retry
        Recording other = new Recording("org.apache.kafka.clients.producer.KafkaProducer", Level.WARN);
        wrap(other, false).warn("[Producer clientId=console-test-3] something");
        assertThat(other.lines).singleElement().extracting(Line::level).isEqualTo(Level.WARN);
        assertThat(ProducerRetries.last("console-test-3", before)).isEmpty();
    }

    /** Kafka Streams 4.3's line after a restart on the state dir of an instance killed under exactly-once. */
    private static final String TASKS_CORRUPTED = "stream-thread [app-StreamThread-1] Get exceptions for the following"
            + " tasks: {2_0=org.apache.kafka.streams.errors.TaskCorruptedException: Tasks [2_0] are corrupted and hence"
            + " need to be re-initialized, 1_0=org.apache.kafka.streams.errors.TaskCorruptedException: Tasks [1_0] are"
            + " corrupted and hence need to be re-initialized}";

    @Test
    void theRecoveryFromCorruptedTasksLoggedWithoutAThrowableIsNotAnError() {
        Recording tm = new Recording("org.apache.kafka.streams.processor.internals.TaskManager", Level.DEBUG);
        wrap(tm, false).error(TASKS_CORRUPTED);
        assertThat(tm.lines).singleElement().satisfies(l -> {
            assertThat(l.level()).isEqualTo(Level.DEBUG);
            assertThat(l.message()).startsWith(TASKS_CORRUPTED).endsWith("(recovered by Kafka, nothing lost)");
        });

        Recording atWarn = new Recording("org.apache.kafka.streams.processor.internals.TaskManager", Level.WARN);
        Logger log = wrap(atWarn, false);
        log.error(TASKS_CORRUPTED);
        assertThat(atWarn.lines).isEmpty();
        // the same logger's other errors still show
        log.error("stream-thread [t] Get exceptions for the following tasks: {1_0=java.lang.IllegalStateException: x}");
        assertThat(atWarn.lines).singleElement().extracting(Line::level).isEqualTo(Level.ERROR);
    }

    @Test
    void atTheDefaultWarnLevelTheRetriedRejectionPrintsNothing() {
        Recording broker = new Recording("kafka.server.ReplicaManager", Level.WARN);
        wrap(broker, true).error("Error processing append operation on partition p", TXN_V2_REJECTION);

        assertThat(broker.lines).isEmpty();
    }

    @Test
    void theSameLoggersOtherErrorsStillShow() {
        Recording broker = new Recording("kafka.server.ReplicaManager", Level.WARN);
        Logger log = wrap(broker, false);
        log.error("Error processing append operation on partition p", new OutOfOrderSequenceException("other cause"));
        log.error("Error processing append operation on partition p", new IllegalStateException("disk gone"));

        assertThat(broker.lines).extracting(Line::level).containsExactly(Level.ERROR, Level.ERROR);
        assertThat(broker.lines.get(1).message()).endsWith("(IllegalStateException: disk gone)");
    }

    @Test
    void theRuleIsForTheBrokersLoggerOnly() {
        Recording client =
                new Recording("org.apache.kafka.streams.processor.internals.RecordCollectorImpl", Level.WARN);
        wrap(client, false).error("send failed", TXN_V2_REJECTION);

        assertThat(client.lines).singleElement().extracting(Line::level).isEqualTo(Level.ERROR);
    }

    @Test
    void aThrowablePrintsAsOneLineWithItsCausesUnlessStackTracesAreAskedFor() {
        Recording app = new Recording("io.llmprof.x", Level.INFO);
        Exception e = new IllegalStateException("outer", new java.io.IOException("inner\nsecond line"));

        wrap(app, false).warn("could not {}", "go on", e);
        assertThat(app.lines).singleElement().satisfies(l -> {
            assertThat(l.throwable()).isNull();
            assertThat(l.message())
                    .isEqualTo(
                            "could not go on (IllegalStateException: outer; caused by IOException: inner second line)");
        });

        Recording debug = new Recording("io.llmprof.x", Level.INFO);
        wrap(debug, true).warn("could not {}", "go on", e);
        assertThat(debug.lines).singleElement().satisfies(l -> {
            assertThat(l.throwable()).isSameAs(e);
            assertThat(l.message()).isEqualTo("could not go on");
        });
    }

    @Test
    void levelsAreTheDelegates() {
        Recording app = new Recording("io.llmprof.x", Level.WARN);
        Logger log = wrap(app, false);
        log.info("hidden");
        log.debug("hidden");
        log.warn("shown {}", 1);

        assertThat(log.isInfoEnabled()).isFalse();
        assertThat(log.isWarnEnabled()).isTrue();
        assertThat(app.lines).extracting(Line::message).containsExactly("shown 1");
    }

    @Test
    void aSelfCausedThrowableDoesNotLoop() {
        Throwable odd = new RuntimeException("loop") {
            private static final long serialVersionUID = 1L;

            @Override
            public synchronized Throwable getCause() {
                return new RuntimeException("again", this);
            }
        };
        assertThat(ConsoleLogger.oneLine(odd))
                .contains("RuntimeException: again", "$1: loop")
                .hasSizeLessThan(500);
        assertThat(RetriedConditions.DEFAULT
                        .forLogger("kafka.server.ReplicaManager")
                        .matches(odd))
                .isFalse();
    }

    @Test
    void theProviderIsWhatTheLauncherNames() throws Exception {
        String launcher = java.nio.file.Files.readString(java.nio.file.Path.of("..", "llmprof"));
        assertThat(launcher).contains("-Dslf4j.provider=" + ConsoleLogProvider.class.getName());
        ConsoleLogProvider p = new ConsoleLogProvider();
        p.initialize();
        assertThat(p.getLoggerFactory().getLogger("kafka.server.ReplicaManager"))
                .isInstanceOf(ConsoleLogger.class);
    }
}
