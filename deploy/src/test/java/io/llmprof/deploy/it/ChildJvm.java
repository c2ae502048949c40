package io.llmprof.deploy.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * `llmprof ARGS...` in its own JVM, as the launcher runs it (its console logging settings), stdout and stderr in a
 * log file: the fault-injection ITs kill such a process with SIGKILL ({@link Process#destroyForcibly}).
 */
final class ChildJvm {
    private ChildJvm() {}

    static Process llmprof(String maxHeap, Path log, List<String> args) throws IOException {
        return llmprof(maxHeap, List.of(), log, args);
    }

    /** @param jvmOptions more JVM options ({@code -Dkey=value}), before the launcher's */
    static Process llmprof(String maxHeap, List<String> jvmOptions, Path log, List<String> args) throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx" + maxHeap));
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of(
                "-Dslf4j.provider=io.llmprof.deploy.logging.ConsoleLogProvider",
                "-Dslf4j.internal.verbosity=WARN",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-Dorg.slf4j.simpleLogger.log.io.llmprof=info",
                // the rest as the launcher (./llmprof) sets them
                "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.controller.QuorumController=error",
                "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients.NetworkClient=error",
                "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients.producer.internals.Sender=warn",
                "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.streams.processor.internals.StateDirectory=error",
                "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.streams.StreamsConfig=error",
                "-cp",
                System.getProperty("java.class.path"),
                "io.llmprof.deploy.cli.Llmprof"));
        cmd.addAll(args);
        return new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
    }

    /**
     * What a child has written to its log so far; "" before the file exists. Read leniently: a character the child
     * is in the middle of writing must not fail a wait that polls the log.
     */
    static String output(Path log) {
        try {
            return Files.exists(log) ? new String(Files.readAllBytes(log), StandardCharsets.UTF_8) : "";
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code n} loopback ports free now, for children's listeners. */
    static List<Integer> freePorts(int n) throws IOException {
        List<ServerSocket> open = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                open.add(new ServerSocket(0, 1, InetAddress.getLoopbackAddress()));
            }
            return open.stream().map(ServerSocket::getLocalPort).toList();
        } finally {
            for (ServerSocket s : open) {
                s.close();
            }
        }
    }
}
