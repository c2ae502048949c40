package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.deploy.broker.BrokerConfig;
import io.llmprof.deploy.broker.EmbeddedKafka;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * `agent replay` and `agent service` ship every readable event of an input with problems, report the problems, and
 * exit 3 as the offline commands do for input read only in part; the same inputs without the problems exit 0. A
 * re-run that skips an input Kafka acknowledged whole (the checkpoint) still says 3 for the one with problems.
 */
class AgentInputProblemsIT {
    private static final String GOOD_LINE = "{\"v\":1,\"ts_ns\":1,\"name\":\"httpReq\",\"rid\":\"r1\"}\n";

    @TempDir
    Path tmp;

    @Test
    void theShippingCommandsExitThreeWhenSomeInputCouldNotBeRead() throws Exception {
        Path model = PipelineHarness.tinyModel(tmp);
        Path dir = Files.createDirectories(tmp.resolve("synth"));
        SynthResult synth = SynthTrace.write(
                SynthSpec.builder(model).passes(2).ranks(1).seed(5).job("p").build(), dir);
        Path trace = synth.files().get(0);
        byte[] bytes = Files.readAllBytes(trace);
        Path truncated =
                Files.write(tmp.resolve("truncated.json"), java.util.Arrays.copyOf(bytes, bytes.length * 3 / 5));
        Path good = Files.writeString(tmp.resolve("good.jsonl"), GOOD_LINE);
        Path bad = Files.writeString(tmp.resolve("bad.jsonl"), GOOD_LINE + "not json\n");

        try (EmbeddedKafka kafka = new EmbeddedKafka(BrokerConfig.defaults()).start()) {
            String bootstrap = kafka.bootstrapServers();

            BrokerOutageIT.Cli clean = replay(bootstrap, trace);
            assertThat(clean.code()).as("%s %s", clean.out(), clean.err()).isZero();
            BrokerOutageIT.Cli cut = replay(bootstrap, truncated);
            assertThat(cut.code()).as("%s %s", cut.out(), cut.err()).isEqualTo(3);
            assertThat(cut.out()).contains("1 input problem(s)", "TRUNCATED_INPUT");
            assertThat(cut.err())
                    .contains("llmprof agent replay: 1 input problem(s): every readable event was shipped")
                    .doesNotContain("Exception");

            BrokerOutageIT.Cli fine = service(bootstrap, good);
            assertThat(fine.code()).as("%s %s", fine.out(), fine.err()).isZero();
            BrokerOutageIT.Cli broken = service(bootstrap, bad);
            assertThat(broken.code()).as("%s %s", broken.out(), broken.err()).isEqualTo(3);
            assertThat(broken.out()).contains("1 events in 1 batches", "1 input problem(s)");
            assertThat(broken.err()).contains("llmprof agent service: 1 input problem(s)");

            // The same commands again: every input is skipped as acknowledged, and the exit codes stay.
            BrokerOutageIT.Cli cleanAgain = replay(bootstrap, trace);
            assertThat(cleanAgain.code())
                    .as("%s %s", cleanAgain.out(), cleanAgain.err())
                    .isZero();
            assertThat(cleanAgain.out()).contains("acknowledged in an earlier run; nothing sent%n".formatted());
            BrokerOutageIT.Cli cutAgain = replay(bootstrap, truncated);
            assertThat(cutAgain.code())
                    .as("%s %s", cutAgain.out(), cutAgain.err())
                    .isEqualTo(3);
            assertThat(cutAgain.out())
                    .contains("acknowledged in an earlier run; nothing sent; that run reported 1 input problem(s)");
            assertThat(cutAgain.err()).contains("llmprof agent replay: 1 input problem(s)");
            BrokerOutageIT.Cli fineAgain = service(bootstrap, good);
            assertThat(fineAgain.code())
                    .as("%s %s", fineAgain.out(), fineAgain.err())
                    .isZero();
            assertThat(fineAgain.out()).contains("nothing sent%n".formatted());
            BrokerOutageIT.Cli brokenAgain = service(bootstrap, bad);
            assertThat(brokenAgain.code())
                    .as("%s %s", brokenAgain.out(), brokenAgain.err())
                    .isEqualTo(3);
            assertThat(brokenAgain.out()).contains("nothing sent; that run reported 1 input problem(s)");
            assertThat(brokenAgain.err()).contains("llmprof agent service: 1 input problem(s)");
        }
    }

    private BrokerOutageIT.Cli replay(String bootstrap, Path file) {
        return BrokerOutageIT.cli(List.of(
                "agent",
                "replay",
                "--bootstrap-servers",
                bootstrap,
                "--job",
                "p",
                "--no-progress",
                "--checkpoint",
                tmp.resolve("replay.checkpoint").toString(),
                file.toString()));
    }

    private BrokerOutageIT.Cli service(String bootstrap, Path file) {
        return BrokerOutageIT.cli(List.of(
                "agent",
                "service",
                "--bootstrap-servers",
                bootstrap,
                "--job",
                "s",
                "--instance",
                file.getFileName().toString(),
                "--checkpoint",
                tmp.resolve(file.getFileName() + ".checkpoint").toString(),
                "--input",
                file.toString()));
    }
}
