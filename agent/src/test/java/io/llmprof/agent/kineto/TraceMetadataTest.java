package io.llmprof.agent.kineto;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * GPU type and process groups of a trace. Real-file values were read by hand with python3 (json.load of the
 * .json.gz, printing deviceProperties and distributedInfo minus the ranks lists).
 */
class TraceMetadataTest {
    @TempDir
    Path tmp;

    private static TraceMetadata of(String json) {
        return TraceMetadata.read(new ByteArrayInputStream(json.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void namedProcessGroupsGiveTpAndEp() {
        TraceMetadata m =
                of("{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":0,\"name\":\"NVIDIA H200\",\"numSms\":132,"
                        + "\"totalGlobalMem\":150754820096,\"computeMajor\":9,\"computeMinor\":0},{\"id\":1,\"name\":\"NVIDIA H200\"}],"
                        + "\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":3,\"world_size\":8,\"pg_count\":3,\"pg_config\":["
                        + "{\"pg_name\":\"0\",\"pg_desc\":\"default_pg\",\"backend_config\":\"cuda:nccl\",\"pg_size\":8,\"ranks\":[0,1,2,3,4,5,6,7]},"
                        + "{\"pg_name\":\"1\",\"pg_desc\":\"tp_group\",\"backend_config\":\"cuda:nccl\",\"pg_size\":4,\"ranks\":[0,1,2,3]},"
                        + "{\"pg_name\":\"2\",\"pg_desc\":\"expert\",\"backend_config\":\"cuda:nccl\",\"pg_size\":8,\"ranks\":[0,1,2,3,4,5,6,7]}]},"
                        + "\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":1}]}");
        assertThat(m.devices()).hasSize(2);
        assertThat(m.device(0).displayName()).isEqualTo("NVIDIA H200");
        assertThat(m.device(0).details()).isEqualTo("132 SMs, 140.4 GiB, compute 9.0");
        assertThat(m.device(1).details()).isEmpty();
        assertThat(m.device(7)).isNull();
        assertThat(m.distributed().rank()).isEqualTo("3");
        assertThat(m.distributed().worldSize()).isEqualTo(8);
        assertThat(m.tensorParallel().degree()).isEqualTo(4);
        assertThat(m.tensorParallel().source()).isEqualTo("process group 1 (pg_desc tp_group)");
        assertThat(m.expertParallel().degree()).isEqualTo(8);
        assertThat(m.expertParallel().source()).isEqualTo("process group 2 (pg_desc expert)");
    }

    @Test
    void unnamedGroupsOfSeveralRanksSayTheyCannotTell() {
        TraceMetadata m = of("{\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":0,\"world_size\":2,\"pg_config\":["
                + "{\"pg_name\":\"0\",\"pg_desc\":\"default_pg\",\"pg_size\":2},{\"pg_name\":\"1\",\"pg_desc\":\"undefined\","
                + "\"pg_size\":2}]},\"traceEvents\":[]}");
        assertThat(m.devicesListed()).isFalse();
        assertThat(m.tensorParallel().degree()).isNull();
        assertThat(m.tensorParallel().source())
                .isEqualTo(
                        "not stated: no process group is named for TP (world size 2, 2 group(s), pg_desc [default_pg,"
                                + " undefined])");
        assertThat(m.expertParallel().degree()).isNull();
    }

    @Test
    void metadataAfterTheEventsIsFoundAndBrokenInputGivesWhatCameBefore() {
        TraceMetadata after = of(
                "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\",\"args\":{\"x\":[1,2]}}],\"deviceProperties\":[{\"id\":2,"
                        + "\"name\":\"\"}],\"distributedInfo\":{\"rank\":\"5\",\"world_size\":1}}");
        assertThat(after.device(2).displayName()).isEqualTo("(unnamed: deviceProperties name is blank)");
        assertThat(after.tensorParallel()).isEqualTo(new TraceMetadata.Degree(1, "world size 1"));
        assertThat(after.expertParallel().degree()).isEqualTo(1);

        TraceMetadata truncated = of("{\"deviceProperties\":[{\"id\":0,\"name\":\"A\"}],\"traceEvents\":[{\"ph\":");
        assertThat(truncated.device(0).name()).isEqualTo("A");
        assertThat(truncated.distributed()).isNull();
        assertThat(truncated.tensorParallel().source()).isEqualTo("the trace has no distributedInfo");
        assertThat(of("[{\"ph\":\"X\"}]")).isEqualTo(TraceMetadata.NONE);
        assertThat(of("not json")).isEqualTo(TraceMetadata.NONE);
    }

    /**
     * deviceProperties before the events is Kineto's order, which writes distributedInfo before them too: a trace of
     * a run without it is not read to its end (skipping the events cost a second for 140 MB).
     */
    @Test
    void aKinetoOrderedTraceIsReadOnlyUpToItsEvents() throws Exception {
        StringBuilder json = new StringBuilder("{\"deviceProperties\":[{\"id\":0,\"name\":\"A\"}],\"traceEvents\":[");
        for (int i = 0; i < 20_000; i++) {
            json.append(i == 0 ? "" : ",")
                    .append("{\"ph\":\"X\",\"name\":\"k\",\"ts\":")
                    .append(i)
                    .append('}');
        }
        json.append("],\"distributedInfo\":{\"rank\":\"5\",\"world_size\":4}}");
        byte[] bytes = json.toString().getBytes(StandardCharsets.UTF_8);
        long[] read = {0};
        InputStream counting = new FilterInputStream(new ByteArrayInputStream(bytes)) {
            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                int n = super.read(b, off, len);
                read[0] += Math.max(n, 0);
                return n;
            }
        };
        TraceMetadata m = TraceMetadata.read(counting);
        assertThat(m.device(0).name()).isEqualTo("A");
        assertThat(m.distributed())
                .as("not Kineto's place for it: not looked for")
                .isNull();
        assertThat(read[0]).isLessThan(bytes.length / 4);
        assertThat(of(new String(bytes, StandardCharsets.UTF_8)
                                        .replace("\"deviceProperties\":[{\"id\":0,\"name\":\"A\"}],", "")
                                + "")
                        .distributed())
                .as("without deviceProperties first (a rewritten file) the events are skipped to what follows them")
                .isNotNull();
    }

    @Test
    void readsGzipFilesAndMissingFilesAreNone() throws Exception {
        Path gz = tmp.resolve("t.json.gz");
        try (var out = new java.util.zip.GZIPOutputStream(Files.newOutputStream(gz))) {
            out.write("{\"deviceProperties\":[{\"id\":0,\"name\":\"G\"}],\"traceEvents\":[]}"
                    .getBytes(StandardCharsets.UTF_8));
        }
        assertThat(TraceMetadata.read(gz).device(0).name()).isEqualTo("G");
        assertThat(TraceMetadata.read(tmp.resolve("missing.json"))).isEqualTo(TraceMetadata.NONE);
    }

    @Test
    void realTraces() {
        // HTA nccl_data: 8 x A100-PG509-200 listed (numSms 108, totalGlobalMem 42297524224, 8.0); nccl 2.17.1,
        // rank 0 of world 2, one group "0" default_pg of size 2 (cuda:nccl).
        TraceMetadata nccl = TraceMetadata.read(SharedData.file("hta/nccl_parser_config/nccl_data.json.gz"));
        assertThat(nccl.devices()).hasSize(8);
        assertThat(nccl.device(0).displayName()).isEqualTo("NVIDIA A100-PG509-200");
        assertThat(nccl.device(0).details()).isEqualTo("108 SMs, 39.4 GiB, compute 8.0");
        assertThat(nccl.distributed())
                .isEqualTo(new TraceMetadata.Distributed(
                        "nccl",
                        "0",
                        2,
                        1,
                        "2.17.1",
                        java.util.List.of(new TraceMetadata.ProcessGroup("0", "default_pg", "cuda:nccl", 2)),
                        0));
        assertThat(nccl.tensorParallel().degree()).isNull();

        // TraceLens H100: the rewritten file has metadata, traceEvents, then deviceProperties (1 entry: NVIDIA
        // H100 80GB HBM3, 132 SMs, 85018279936 bytes, 9.0) and no distributedInfo.
        TraceMetadata h100 =
                TraceMetadata.read(SharedData.file("tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"));
        assertThat(h100.devices())
                .containsExactly(new TraceMetadata.Device(0, "NVIDIA H100 80GB HBM3", 132, 85018279936L, 9, 0));
        assertThat(h100.distributed()).isNull();

        // TraceLens SGLang decode: 1 x AMD Instinct MI300X (304 CUs, 9.4), world size 1 with 7 groups of size 1.
        TraceMetadata sglang =
                TraceMetadata.read(SharedData.file("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"));
        assertThat(sglang.device(0).displayName()).isEqualTo("AMD Instinct MI300X");
        assertThat(sglang.device(0).sms()).isEqualTo(304);
        assertThat(sglang.distributed().groups()).hasSize(7);
        assertThat(sglang.tensorParallel()).isEqualTo(new TraceMetadata.Degree(1, "world size 1"));
    }
}
