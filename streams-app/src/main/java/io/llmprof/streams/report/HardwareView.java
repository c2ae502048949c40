package io.llmprof.streams.report;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.agent.kineto.TraceMetadata;
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

    /** @param device the device the rank's GPU events ran on (null: unknown) */
    public static HardwareView of(TraceMetadata m, Integer device) {
        TraceMetadata.Device d = m.device(device);
        String note = null;
        if (d == null) {
            List<String> names = m.devices().stream()
                    .map(TraceMetadata.Device::name)
                    .distinct()
                    .toList();
            if (!m.devicesListed()) {
                note = "the trace has no deviceProperties";
            } else if (device == null) {
                note = "the rank's GPU events carry no device id";
            } else if (names.size() == 1
                    && names.get(0) != null
                    && !names.get(0).isBlank()) {
                // ROCm numbers devices after the host's CPU agents (kernels on device 9, deviceProperties id 0):
                // with one model listed, that model is the rank's.
                d = m.devices().get(0);
                note = "device " + device + " is not among the deviceProperties ids "
                        + m.devices().stream().map(x -> x.id()).toList()
                        + " (ROCm counts CPU agents in device ids); every listed GPU is this model";
            } else {
                note = "device " + device + " is not among the deviceProperties ids "
                        + m.devices().stream().map(x -> x.id()).toList();
            }
        } else if (d.name() == null || d.name().isBlank()) {
            note = "deviceProperties gives device " + device + " no name";
        }
        TraceMetadata.Distributed dist = m.distributed();
        TraceMetadata.Degree tp = m.tensorParallel();
        TraceMetadata.Degree ep = m.expertParallel();
        return new HardwareView(
                device,
                d == null || d.name() == null || d.name().isBlank()
                        ? null
                        : d.name().trim(),
                note,
                d == null ? null : d.sms(),
                d == null ? null : d.memoryBytes(),
                d == null ? null : d.computeCapability(),
                m.devices().size() + m.devicesOmitted(),
                dist == null ? null : dist.backend(),
                dist == null ? null : dist.rank(),
                dist == null ? null : dist.worldSize(),
                tp.degree(),
                tp.source(),
                ep.degree(),
                ep.source(),
                dist == null
                        ? List.of()
                        : dist.groups().stream()
                                .map(g -> new GroupView(g.name(), g.desc(), g.backend(), g.size()))
                                .toList());
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
