package io.llmprof.streams.topology;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.KinetoReader;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.synth.LayerTruth;
import io.llmprof.agent.synth.RankTruth;
import io.llmprof.agent.synth.SynthEdits;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.support.EdgeCases;
import io.llmprof.streams.support.EdgeCases.Expected;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A lost anchor and a draft (MTP) layer in the same synth trace, through the Kafka Streams topology
 * (TopologyTestDriver, state store, batches of 200 GPU events as the agent sends them): the passes are
 * exactly the {@link EdgeCases} expectation and the layers of undamaged passes are the truth's.
 */
class SynthEdgeCasesTopologyTest {
    @TempDir
    Path tmp;

    @Test
    void lostAnchorAndDraftLayerDamageOnePassEachThroughTheTopology() throws Exception {
        Path config = tmp.resolve("llama.json");
        Files.writeString(
                config,
                """
                {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 1024, "intermediate_size": 2816,
                 "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000}
                """);
        SynthEdits edits = SynthEdits.NONE.withMissingAnchor(2, 1).withDraftLayerEvery(5); // draft after pass 4
        RankTruth truth = SynthTrace.write(
                        SynthSpec.builder(config)
                                .passes(9)
                                .ranks(2)
                                .seed(3)
                                .stepMarkers(false)
                                .edits(edits)
                                .build(),
                        tmp.resolve("out"))
                .ranks()
                .get(1);
        List<TraceEvent> gpu = new ArrayList<>();
        KinetoReader.read(truth.file(), ReaderOptions.defaults(), new OrderedSink() {
            @Override
            public void event(String rank, TraceBatch.Lane lane, long index, TraceEvent e) {
                if (lane == TraceBatch.Lane.GPU) {
                    gpu.add(e);
                }
            }

            @Override
            public void endOfTrace(String rank, TraceBatch.Lane lane) {}
        });

        List<Expected> expected = EdgeCases.passes(truth, edits);
        assertThat(expected).hasSize(10);
        try (Harness h = new Harness(
                tmp.resolve("state"), new Golden.Segmenter("generic", "BatchDecodeWithPagedKVCacheKernel", 4))) {
            long ts = 1_000;
            for (int i = 0; i < gpu.size(); i += 200) {
                List<TraceEvent> chunk = gpu.subList(i, Math.min(gpu.size(), i + 200));
                TraceBatch b = new TraceBatch(
                        "edge", "run-1", "1", TraceBatch.Lane.GPU, "synth", i, chunk, i + 200 >= gpu.size());
                h.traceEvents.pipeInput("edge/1", b, ts++);
            }
            List<PassRecord> passes =
                    h.passes.readRecordsToList().stream().map(TestRecord::value).toList();
            List<LayerRecord> layers =
                    h.layers.readRecordsToList().stream().map(TestRecord::value).toList();
            assertThat(passes).hasSize(expected.size());
            for (int i = 0; i < expected.size(); i++) {
                PassRecord p = passes.get(i);
                Expected e = expected.get(i);
                assertThat(p.index()).isEqualTo(i);
                assertThat(p.complete()).as("pass %d", i).isEqualTo(e.complete());
                assertThat(p.closedBy()).as("pass %d", i).isEqualTo(e.closedBy());
                assertThat(p.kernels()).as("pass %d", i).isEqualTo(e.kernels());
                assertThat(p.layerCount()).as("pass %d", i).isEqualTo(e.layers());
            }
            assertThat(expected.get(2).complete()).isFalse();
            assertThat(expected.get(5).draft()).isTrue();
            for (int pass : new int[] {3, 4, 6}) { // after the lost anchor, before and after the draft layer
                List<LayerRecord> mine =
                        layers.stream().filter(l -> l.passIndex() == pass).toList();
                assertThat(mine).hasSize(4);
                for (LayerTruth lt : truth.layerTruths()) {
                    assertThat(mine.get(lt.index()).kernels()).isEqualTo(lt.kernels());
                    assertThat(mine.get(lt.index()).allreduceCount()).isEqualTo(lt.allReduces());
                    assertThat(mine.get(lt.index()).type()).isEqualTo(lt.type());
                }
            }
        }
    }
}
