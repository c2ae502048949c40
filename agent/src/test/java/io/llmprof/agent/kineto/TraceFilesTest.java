package io.llmprof.agent.kineto;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class TraceFilesTest {
    @TempDir
    Path tmp;

    @ParameterizedTest(name = "{0} -> run {1}")
    @CsvSource({
        "TP-0.json, default",
        "tp7.json.gz, default",
        "rank-3.pt.trace.json.gz, default",
        "run3_rank0.json, run3",
        "decode_TP-2_bs32.json, decode_bs32",
        "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz, Apr_03_18_51_38.1102",
        "sglang_Qwen3-8B_decode.json.gz, sglang_Qwen3-8B_decode",
        "decode_gpu_0.json, decode_gpu_0",
        "prank0.json, prank0"
    })
    void the_run_is_the_file_name_without_extensions_and_without_the_rank_it_states(String file, String run) {
        assertThat(TraceFiles.runName(Path.of(file))).isEqualTo(run);
    }

    @Test
    void every_rank_file_of_a_job_directory_shares_one_run_and_the_directory_is_the_job() {
        Path job = tmp.resolve("llama-tp8");
        for (int r = 0; r < 8; r++) {
            Path f = job.resolve("TP-" + r + ".json");
            assertThat(TraceFiles.jobName(f)).isEqualTo("llama-tp8");
            assertThat(TraceFiles.runName(f)).isEqualTo(TraceFiles.DEFAULT_RUN);
            assertThat(TraceFiles.rankFromFileName(f.getFileName().toString())).contains(Integer.toString(r));
        }
    }

    @Test
    void a_directory_expands_to_its_trace_files_in_name_order() throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("job"));
        for (String name : List.of("TP-1.json", "TP-0.json.gz", ".hidden.json", "notes.txt", "TP-2.pt.trace.json")) {
            Files.writeString(dir.resolve(name), "[]");
        }
        Files.createDirectories(dir.resolve("sub.json"));
        Path single = tmp.resolve("other.json");
        assertThat(TraceFiles.expand(List.of(dir, single)))
                .containsExactly(
                        dir.resolve("TP-0.json.gz"),
                        dir.resolve("TP-1.json"),
                        dir.resolve("TP-2.pt.trace.json"),
                        single);
    }
}
