package io.llmprof.events.view;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import java.util.List;

/**
 * Where a rank ran, as its trace says: the GPU of the device its GPU events ran on (Kineto {@code
 * deviceProperties}) and the run's parallelism ({@code distributedInfo}: backend, world size, process groups, TP and
 * EP where a group names them). What the trace does not say is null, with the reason beside it, never a guess.
 *
 * @param device the device id of the rank's first GPU event (null: none)
 * @param gpuNote why {@code gpu} is null; null when it is known
 * @param devicesListed entries of deviceProperties (GPUs visible to the process, not only this rank's)
 */
@JsonInclude(JsonInclude.Include.ALWAYS)
@JsonPropertyOrder({
    "device",
    "gpu",
    "gpu_note",
    "sms",
    "memory_bytes",
    "compute_capability",
    "devices_listed",
    "backend",
    "trace_rank",
    "world_size",
    "tp",
    "tp_source",
    "ep",
    "ep_source",
    "process_groups"
})
public record HardwareView(
        @JsonProperty("device") Integer device,
        @JsonProperty("gpu") String gpu,
        @JsonProperty("gpu_note") String gpuNote,
        @JsonProperty("sms") Integer sms,
        @JsonProperty("memory_bytes") Long memoryBytes,
        @JsonProperty("compute_capability") String computeCapability,
        @JsonProperty("devices_listed") int devicesListed,
        @JsonProperty("backend") String backend,
        @JsonProperty("trace_rank") String traceRank,
        @JsonProperty("world_size") Integer worldSize,
        @JsonProperty("tp") Integer tp,
        @JsonProperty("tp_source") String tpSource,
        @JsonProperty("ep") Integer ep,
        @JsonProperty("ep_source") String epSource,
        @JsonProperty("process_groups") List<GroupView> processGroups) {

    /** One process group of {@code distributedInfo.pg_config}. */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"name", "desc", "backend", "size"})
    public record GroupView(
            @JsonProperty("name") String name,
            @JsonProperty("desc") String desc,
            @JsonProperty("backend") String backend,
            @JsonProperty("size") Integer size) {}

    public HardwareView {
        processGroups = processGroups == null ? List.of() : List.copyOf(processGroups);
    }

    /**
     * One header line: "rank 0: GPU NVIDIA H100 80GB HBM3 (device 0 of 8 listed; 132 SMs, 79.2 GiB, compute 9.0);
     * nccl, world size 2; TP 2 (process group 1 (pg_desc tp)), EP ? (not stated: ...)".
     */
    public String line(String rank) {
        StringBuilder sb = new StringBuilder("rank ").append(rank).append(": GPU ");
        boolean described = gpu != null || sms != null || memoryBytes != null || computeCapability != null;
        if (described) {
            sb.append(gpu == null ? "unnamed" : gpu)
                    .append(" (device ")
                    .append(device)
                    .append(" of ")
                    .append(devicesListed)
                    .append(" listed");
            String details = details();
            if (!details.isEmpty()) {
                sb.append("; ").append(details);
            }
            if (gpuNote != null) {
                sb.append("; ").append(gpuNote);
            }
            sb.append(")");
        } else {
            sb.append("unknown (").append(gpuNote).append(")");
        }
        sb.append("; ");
        if (backend == null && worldSize == null) {
            sb.append("no distributedInfo");
        } else {
            sb.append(backend == null ? "backend ?" : backend)
                    .append(", rank ")
                    .append(traceRank == null ? "?" : traceRank)
                    .append(" of world size ")
                    .append(worldSize == null ? "?" : worldSize);
        }
        sb.append("; TP ").append(degree(tp, tpSource)).append(", EP ").append(degree(ep, epSource));
        return sb.toString();
    }

    private String details() {
        List<String> parts = new java.util.ArrayList<>();
        if (sms != null) {
            parts.add(sms + " SMs");
        }
        if (memoryBytes != null) {
            parts.add(String.format(java.util.Locale.ROOT, "%.1f GiB", memoryBytes / (double) (1L << 30)));
        }
        if (computeCapability != null) {
            parts.add("compute " + computeCapability);
        }
        return String.join(", ", parts);
    }

    private static String degree(Integer degree, String source) {
        return (degree == null ? "?" : degree.toString()) + " (" + source + ")";
    }
}
