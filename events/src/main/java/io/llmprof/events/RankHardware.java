package io.llmprof.events;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.events.view.HardwareView;
import java.util.Objects;

/**
 * Where a rank ran, on {@code llmprof.rank-hardware} (key {@code <job>/<rank>}, the latest record per key is the
 * current one): what the agent read from the trace file it ships ({@code deviceProperties}, {@code distributedInfo})
 * for the device of the rank's first GPU event, the same {@link HardwareView} that `analyze layers` reports for
 * that file.
 *
 * @param source the file the agent read it from
 */
@JsonPropertyOrder({"job", "run", "rank", "source", "hardware"})
public record RankHardware(
        @JsonProperty("job") String job,
        @JsonProperty("run") String run,
        @JsonProperty("rank") String rank,
        @JsonProperty("source") String source,
        @JsonProperty("hardware") HardwareView hardware) {
    public RankHardware {
        Objects.requireNonNull(job, "job");
        Objects.requireNonNull(rank, "rank");
        Objects.requireNonNull(hardware, "hardware");
    }

    /** The record key: {@link RankKey#of}. */
    public String key() {
        return RankKey.of(job, rank);
    }
}
