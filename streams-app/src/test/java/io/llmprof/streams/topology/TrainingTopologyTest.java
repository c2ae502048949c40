package io.llmprof.streams.topology;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.PassRecord;
import io.llmprof.streams.support.SharedData;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Live, a real training trace (HTA's nccl_data: 3 ProfilerSteps of 900 kernels, each with 523 backward ops and 2
 * optimizer annotations, counted by hand in TrainingTracesTest) shipped in small interleaved batches gives the same
 * three whole training-step passes as the offline command, with no anomaly.
 */
class TrainingTopologyTest {
    @TempDir
    Path dir;

    @Test
    void aTrainingTraceIsOneTrainingPassPerStepLive() throws IOException {
        Path trace = SharedData.file("hta/nccl_parser_config/nccl_data.json.gz");
        List<Golden.InputRecord> records = SynthMarkersTopologyTest.batches(trace, 200);
        try (Harness h = new Harness(dir.resolve("state"), new Golden.Segmenter("generic", null, null))) {
            h.pipe(records);
            List<PassRecord> passes = h.passes.readValuesToList();
            assertThat(passes)
                    .extracting(PassRecord::step)
                    .containsExactly("ProfilerStep#4", "ProfilerStep#5", "ProfilerStep#6");
            assertThat(passes).extracting(PassRecord::kernels).containsExactly(900, 900, 900);
            assertThat(passes).allMatch(p -> p.training() && p.complete() && p.layerCount() == 0);
            assertThat(h.anomalies.readValuesToList()).isEmpty();
        }
    }
}
