package io.llmprof.events.view;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import java.math.BigDecimal;
import java.util.Comparator;
import java.util.List;

/**
 * One pass with its layers, as `analyze layers --format json` and the REST API show it. Field names are
 * a contract other tools rely on: do not rename.
 */
@JsonInclude(JsonInclude.Include.ALWAYS)
@JsonPropertyOrder({
    "index",
    "start_us",
    "end_us",
    "wall_us",
    "busy_us",
    "sum_us",
    "kernels",
    "complete",
    "steady",
    "workload",
    "phase",
    "batch_size",
    "tokens",
    "step",
    "boundary",
    "closed_by",
    "trace_start_us",
    "notes",
    "prologue",
    "epilogue",
    "layers"
})
public record PassView(
        @JsonProperty("index") long index,
        @JsonProperty("start_us") BigDecimal startUs,
        @JsonProperty("end_us") BigDecimal endUs,
        @JsonProperty("wall_us") BigDecimal wallUs,
        @JsonProperty("busy_us") BigDecimal busyUs,
        @JsonProperty("sum_us") BigDecimal sumUs,
        @JsonProperty("kernels") int kernels,
        @JsonProperty("complete") boolean complete,
        @JsonProperty("steady") boolean steady,
        @JsonProperty("workload") String workload,
        @JsonProperty("phase") String phase,
        @JsonProperty("batch_size") Integer batchSize,
        @JsonProperty("tokens") Long tokens,
        @JsonProperty("step") String step,
        @JsonProperty("boundary") String boundary,
        @JsonProperty("closed_by") String closedBy,
        @JsonProperty("trace_start_us") BigDecimal traceStartUs,
        @JsonProperty("notes") List<String> notes,
        @JsonProperty("prologue") SegmentView prologue,
        @JsonProperty("epilogue") SegmentView epilogue,
        @JsonInclude(JsonInclude.Include.NON_NULL) @JsonProperty("layers") List<LayerView> layers) {

    /** The same pass without its layers (list endpoints): the {@code layers} field is left out. */
    public PassView withoutLayers() {
        return new PassView(
                index,
                startUs,
                endUs,
                wallUs,
                busyUs,
                sumUs,
                kernels,
                complete,
                steady,
                workload,
                phase,
                batchSize,
                tokens,
                step,
                boundary,
                closedBy,
                traceStartUs,
                notes,
                prologue,
                epilogue,
                null);
    }

    public static PassView of(PassRecord p, List<LayerRecord> layers) {
        List<LayerView> views = layers.stream()
                .sorted(Comparator.comparingInt(LayerRecord::layer))
                .map(LayerView::of)
                .toList();
        return new PassView(
                p.index(),
                Micros.of(p.startNs()),
                Micros.of(p.endNs()),
                Micros.of(p.wallNs()),
                Micros.of(p.busyNs()),
                Micros.of(p.sumNs()),
                p.kernels(),
                p.complete(),
                p.steady(),
                p.workload(),
                p.phase(),
                p.batchSize(),
                p.tokens(),
                p.step(),
                p.boundary(),
                p.closedBy(),
                Micros.of(p.traceStartNs()),
                p.notes(),
                SegmentView.of(p.prologue()),
                SegmentView.of(p.epilogue()),
                views);
    }
}
