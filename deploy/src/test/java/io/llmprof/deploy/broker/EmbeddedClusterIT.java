package io.llmprof.deploy.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.llmprof.events.TopicBootstrap;
import io.llmprof.events.TopicLayout;
import io.llmprof.events.Topics;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Three nodes in one JVM: one quorum, one cluster id, and llmprof's topics replicated 3 times. */
class EmbeddedClusterIT {

    @Test
    void threeNodesFormOneClusterAndLlmprofTopicsGetReplicationThreeAndMinInsyncTwo(@TempDir Path dir)
            throws Exception {
        try (EmbeddedCluster cluster =
                EmbeddedCluster.start(new EmbeddedCluster.Config(3, 0, dir, null, Duration.ofSeconds(90)))) {
            assertThat(cluster.bootstrapServers().split(",")).hasSize(3);
            assertThat(cluster.nodes()).extracting(EmbeddedKafka::nodeId).containsExactly(1, 2, 3);
            for (int i = 1; i <= 3; i++) {
                assertThat(EmbeddedKafka.storedClusterId(dir.resolve("node-" + i)))
                        .isEqualTo(cluster.clusterId());
            }

            TopicBootstrap.Applied applied =
                    TopicBootstrap.ensureTopics(cluster.bootstrapServers(), TopicLayout.defaults());
            assertThat(applied.brokers()).isEqualTo(3);
            assertThat(applied.replicationFactor()).isEqualTo((short) 3);
            assertThat(applied.minInsyncReplicas()).isEqualTo((short) 2);
            assertThat(applied.created()).hasSameSizeAs(Topics.all());

            try (Admin admin =
                    Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrapServers()))) {
                // CreateTopics returns once the controller has the topics; each broker learns them from the metadata
                // log a moment later, and until then answers UnknownTopicOrPartition (retriable: clients retry it).
                Map<String, TopicDescription> topics =
                        untilKnown(() -> admin.describeTopics(Topics.all()).allTopicNames());
                TopicDescription input = topics.get(Topics.TRACE_EVENTS.name());
                assertThat(input.partitions()).hasSize(3);
                assertThat(input.partitions())
                        .allSatisfy(p -> assertThat(p.replicas()).hasSize(3));
                assertThat(topics.get(Topics.DLQ.name()).partitions()).hasSize(1);
                ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, Topics.TRACE_EVENTS.name());
                assertThat(untilKnown(() -> admin.describeConfigs(List.of(r)).all())
                                .get(r)
                                .get("min.insync.replicas")
                                .value())
                        .isEqualTo("2");
            }
        }
    }

    /**
     * With SASL users, every port of every node wants credentials: the client ports and the controller quorum's
     * ports give no answer without them and refuse a wrong password, and the nodes replicate and elect among
     * themselves with the shared {@link BrokerConfig#INTERNAL_USER}.
     */
    @Test
    void aClusterWithSaslUsersAnswersOnlyClientsThatLogIn(@TempDir Path dir) throws Exception {
        Map<String, String> users = Map.of(BrokerConfig.INTERNAL_USER, "nodes-secret", "alice", "alice-secret");
        try (EmbeddedCluster cluster =
                EmbeddedCluster.start(new EmbeddedCluster.Config(3, 0, dir, null, Duration.ofSeconds(90), users))) {
            Map<String, String> alice = cluster.nodes().get(0).clientSecurity("alice");
            String bootstrap = cluster.bootstrapServers();
            String controllers = cluster.nodeConfigs().get(0).controllerQuorum().stream()
                    .map(v -> v.host() + ":" + v.port())
                    .collect(java.util.stream.Collectors.joining(","));

            // replicated over SASL
            assertReplicatesToThree(bootstrap, alice);

            for (String[] port : new String[][] {
                {AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap},
                {AdminClientConfig.BOOTSTRAP_CONTROLLERS_CONFIG, controllers}
            }) {
                assertThat(describeCluster(port, alice))
                        .as("%s with credentials", port[0])
                        .isNull();
                assertThat(describeCluster(port, Map.of()))
                        .as("%s without credentials", port[0])
                        .isInstanceOf(ExecutionException.class)
                        .hasCauseInstanceOf(org.apache.kafka.common.errors.TimeoutException.class);
                Map<String, String> wrong = new java.util.HashMap<>(alice);
                wrong.put("sasl.jaas.config", wrong.get("sasl.jaas.config").replace("alice-secret", "guess"));
                assertThat(describeCluster(port, wrong))
                        .as("%s with a wrong password", port[0])
                        .hasRootCauseInstanceOf(org.apache.kafka.common.errors.SaslAuthenticationException.class);
            }
        }
    }

    /**
     * With a keystore and a truststore besides the SASL users, every port of every node is SASL_SSL: the nodes
     * replicate and run the quorum over TLS, trusting each other through the truststore; a client with the truststore
     * and a login is answered on the client ports, and on the controller ports when it also shows a certificate the
     * truststore trusts (a node's); one without a certificate fails the handshake there, one that speaks PLAINTEXT or
     * SASL_PLAINTEXT gets no answer, and one whose truststore lacks the certificate fails the handshake.
     */
    @Test
    void aClusterWithTlsAndSaslUsersSpeaksOnlySaslSsl(@TempDir Path dir) throws Exception {
        TestTls tls = TestTls.create(dir, "nodes", "ip:127.0.0.1,dns:localhost");
        TestTls stranger = TestTls.create(dir, "stranger", "ip:127.0.0.1");
        Map<String, String> users = Map.of(BrokerConfig.INTERNAL_USER, "nodes-secret", "alice", "alice-secret");
        try (EmbeddedCluster cluster = EmbeddedCluster.start(new EmbeddedCluster.Config(
                3, 0, dir.resolve("data"), null, Duration.ofSeconds(90), users, tls.load(true)))) {
            assertThat(cluster.nodeConfigs())
                    .allSatisfy(c -> assertThat(c.securityProtocol()).isEqualTo("SASL_SSL"));
            Map<String, String> alice = cluster.nodes().get(0).clientSecurity("alice");
            assertThat(alice)
                    .containsEntry("security.protocol", "SASL_SSL")
                    .containsEntry(
                            "ssl.truststore.location",
                            tls.truststore().toAbsolutePath().toString());
            String bootstrap = cluster.bootstrapServers();
            String controllers = cluster.nodeConfigs().get(0).controllerQuorum().stream()
                    .map(v -> v.host() + ":" + v.port())
                    .collect(java.util.stream.Collectors.joining(","));

            assertReplicatesToThree(bootstrap, alice);

            Map<String, String> aliceWithNodeCertificate = new java.util.HashMap<>(alice);
            aliceWithNodeCertificate.put("ssl.keystore.location", tls.keystore().toString());
            aliceWithNodeCertificate.put("ssl.keystore.password", TestTls.KEYSTORE_PASSWORD);
            String[] controllerPorts = {AdminClientConfig.BOOTSTRAP_CONTROLLERS_CONFIG, controllers};
            assertThat(describeCluster(controllerPorts, alice))
                    .as("the controller ports without a client certificate")
                    .hasCauseInstanceOf(org.apache.kafka.common.errors.SslAuthenticationException.class);

            for (String[] port :
                    new String[][] {{AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap}, controllerPorts}) {
                Map<String, String> client = port == controllerPorts ? aliceWithNodeCertificate : alice;
                assertThat(describeCluster(port, client))
                        .as("%s over SASL_SSL", port[0])
                        .isNull();
                assertThat(describeCluster(port, Map.of()))
                        .as("%s in PLAINTEXT", port[0])
                        .isInstanceOf(ExecutionException.class)
                        .hasCauseInstanceOf(org.apache.kafka.common.errors.TimeoutException.class);
                Map<String, String> saslPlaintext = new java.util.HashMap<>(client);
                saslPlaintext.put("security.protocol", "SASL_PLAINTEXT");
                assertThat(describeCluster(port, saslPlaintext))
                        .as("%s in SASL_PLAINTEXT", port[0])
                        .isInstanceOf(ExecutionException.class)
                        .hasCauseInstanceOf(org.apache.kafka.common.errors.TimeoutException.class);
                Map<String, String> untrusting = new java.util.HashMap<>(client);
                untrusting.put("ssl.truststore.location", stranger.truststore().toString());
                assertThat(describeCluster(port, untrusting))
                        .as("%s with a truststore that lacks the nodes' certificate", port[0])
                        .hasCauseInstanceOf(org.apache.kafka.common.errors.SslAuthenticationException.class);
            }
        }
    }

    /**
     * With client certificates required on the client ports, the nodes replicate among themselves (they show their
     * keystore's certificate there too), and a client with a node's certificate is answered.
     */
    @Test
    void aClusterWithClientAuthReplicatesAndAnswersClientsWithACertificate(@TempDir Path dir) throws Exception {
        TestTls tls = TestTls.create(dir, "nodes", "ip:127.0.0.1");
        try (EmbeddedCluster cluster = EmbeddedCluster.start(new EmbeddedCluster.Config(
                3,
                0,
                dir.resolve("data"),
                null,
                Duration.ofSeconds(90),
                Map.of(),
                tls.load(true).withClientAuth()))) {
            Map<String, String> client = cluster.nodes().get(0).clientSecurity("anyone");
            assertThat(client).containsEntry("security.protocol", "SSL").containsKey("ssl.keystore.location");

            assertReplicatesToThree(cluster.bootstrapServers(), client);

            Map<String, String> anonymous = new java.util.HashMap<>(client);
            anonymous.keySet().removeIf(k -> k.startsWith("ssl.keystore.") || k.equals("ssl.key.password"));
            assertThat(describeCluster(
                            new String[] {AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrapServers()},
                            anonymous))
                    .as("a client without a certificate")
                    .hasCauseInstanceOf(org.apache.kafka.common.errors.SslAuthenticationException.class);
        }
    }

    /**
     * A node whose peers never come gives up at its start timeout with one exception that says so, and is shut down:
     * its controller port closed, not left running behind a failed start (Kafka throws a checked TimeoutException).
     */
    @Test
    void aNodeWhosePeersNeverComeFailsAtItsStartTimeoutAndStops(@TempDir Path dir) throws Exception {
        List<Integer> ports = freePorts(3);
        List<BrokerConfig.Voter> quorum = List.of(
                new BrokerConfig.Voter(1, "127.0.0.1", ports.get(1)),
                new BrokerConfig.Voter(2, "127.0.0.1", ports.get(2)));
        BrokerConfig alone = BrokerConfig.defaults()
                .withPort(ports.get(0))
                .withDataDir(dir.resolve("node-1"))
                .withStartTimeout(Duration.ofSeconds(10))
                .withNode(1, quorum, org.apache.kafka.common.Uuid.randomUuid().toString());

        Throwable failed = org.assertj.core.api.Assertions.catchThrowable(() -> new EmbeddedKafka(alone).start());

        assertThat(failed)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("Kafka broker failed to start on 127.0.0.1:" + ports.get(0));
        await().atMost(Duration.ofSeconds(30))
                .pollInterval(Duration.ofMillis(200))
                .until(() -> {
                    try (java.net.Socket s = new java.net.Socket()) {
                        s.connect(new java.net.InetSocketAddress("127.0.0.1", ports.get(1)), 1_000);
                        return false;
                    } catch (java.io.IOException e) {
                        return true;
                    }
                });
    }

    /**
     * Node 3's certificate is not the cluster's: its truststore trusts the others', theirs lacks its. The controller
     * ports want a trusted client certificate, so node 3 cannot join the quorum and its start fails, instead of
     * starting with connections from the others that all fail; nodes 1 and 2 start without it.
     */
    @Test
    void aNodeWhoseCertificateTheOthersDoNotTrustCannotJoinTheQuorum(@TempDir Path dir) throws Exception {
        TestTls cluster = TestTls.create(dir, "nodes", "ip:127.0.0.1");
        TestTls stranger = TestTls.create(dir, "stranger", "ip:127.0.0.1");
        stranger.trust(dir, "nodes");
        List<Integer> ports = freePorts(6);
        List<BrokerConfig.Voter> quorum = List.of(
                new BrokerConfig.Voter(1, "127.0.0.1", ports.get(3)),
                new BrokerConfig.Voter(2, "127.0.0.1", ports.get(4)),
                new BrokerConfig.Voter(3, "127.0.0.1", ports.get(5)));
        String clusterId = org.apache.kafka.common.Uuid.randomUuid().toString();
        List<java.util.concurrent.CompletableFuture<EmbeddedKafka>> starting = new java.util.ArrayList<>();
        for (int id = 1; id <= 3; id++) {
            BrokerConfig node = BrokerConfig.defaults()
                    .withPort(ports.get(id - 1))
                    .withDataDir(dir.resolve("node-" + id))
                    .withTls((id == 3 ? stranger : cluster).load(true))
                    .withStartTimeout(Duration.ofSeconds(id == 3 ? 20 : 90))
                    .withOverride("controlled.shutdown.enable", "false")
                    .withNode(id, quorum, clusterId);
            starting.add(java.util.concurrent.CompletableFuture.supplyAsync(() -> new EmbeddedKafka(node).start()));
        }
        List<EmbeddedKafka> started = new java.util.ArrayList<>();
        try {
            for (int id = 1; id <= 2; id++) {
                started.add(starting.get(id - 1).get(120, TimeUnit.SECONDS));
            }
            Throwable third = org.assertj.core.api.Assertions.catchThrowable(
                    () -> started.add(starting.get(2).get(120, TimeUnit.SECONDS)));
            assertThat(third)
                    .as("node 3's start")
                    .isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(IllegalStateException.class);
        } finally {
            started.stream()
                    .map(n -> java.util.concurrent.CompletableFuture.runAsync(n::close))
                    .toList()
                    .forEach(java.util.concurrent.CompletableFuture::join);
        }
    }

    /** {@code n} loopback ports free now. */
    private static List<Integer> freePorts(int n) throws java.io.IOException {
        List<java.net.ServerSocket> open = new java.util.ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                open.add(new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1")));
            }
            return open.stream().map(java.net.ServerSocket::getLocalPort).toList();
        } finally {
            for (java.net.ServerSocket s : open) {
                s.close();
            }
        }
    }

    /** A topic of 3 replicas, all in sync, takes a record with acks=all from a client with these settings. */
    private static void assertReplicatesToThree(String bootstrap, Map<String, String> security) throws Exception {
        Map<String, Object> client = new java.util.HashMap<>(security);
        client.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(client)) {
            admin.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic("secured", 1, (short) 3)))
                    .all()
                    .get(60, TimeUnit.SECONDS);
            assertThat(untilKnown(() -> admin.describeTopics(List.of("secured")).allTopicNames())
                            .get("secured")
                            .partitions()
                            .get(0)
                            .isr())
                    .hasSize(3);
        }
        Map<String, Object> producer = new java.util.HashMap<>(client);
        producer.put("acks", "all");
        try (var p = new org.apache.kafka.clients.producer.KafkaProducer<>(
                producer,
                new org.apache.kafka.common.serialization.StringSerializer(),
                new org.apache.kafka.common.serialization.StringSerializer())) {
            p.send(new org.apache.kafka.clients.producer.ProducerRecord<>("secured", "k", "v"))
                    .get(60, TimeUnit.SECONDS);
        }
    }

    /** What describing the cluster through {@code port} ({bootstrap key, address}) threw; null when it answered. */
    private static Throwable describeCluster(String[] port, Map<String, String> security) {
        Map<String, Object> c = new java.util.HashMap<>(security);
        c.put(port[0], port[1]);
        c.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 3_000);
        c.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 4_000);
        try (Admin admin = Admin.create(c)) {
            return org.assertj.core.api.Assertions.catchThrowable(
                    () -> assertThat(admin.describeCluster().nodes().get(20, TimeUnit.SECONDS))
                            .hasSize(3));
        }
    }

    /** The admin call's result once the broker that answers it knows the topics (30 s at most). */
    private static <T> T untilKnown(Supplier<KafkaFuture<T>> call) {
        return await().atMost(Duration.ofSeconds(30))
                .ignoreException(UnknownTopicOrPartitionException.class)
                .until(
                        () -> {
                            try {
                                return call.get().get(30, TimeUnit.SECONDS);
                            } catch (ExecutionException e) {
                                throw e.getCause() instanceof UnknownTopicOrPartitionException unknown ? unknown : e;
                            }
                        },
                        Objects::nonNull);
    }
}
