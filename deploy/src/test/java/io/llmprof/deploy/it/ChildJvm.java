package io.llmprof.deploy.it;

import java.io.IOException;
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
}
