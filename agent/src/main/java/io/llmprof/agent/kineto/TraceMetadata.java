package io.llmprof.agent.kineto;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import io.llmprof.events.view.HardwareView;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * What a Kineto trace says about where it ran: the top-level {@code deviceProperties} (one entry per visible GPU:
 * name, SMs, memory, compute capability) and {@code distributedInfo} (backend, rank, world size, process groups).
 * Kineto writes both before {@code traceEvents}; files rewritten by other tools (TraceLens' H100 trace) put them
 * after it. So the reader stops at {@code traceEvents} once {@code deviceProperties} was seen (Kineto's order: a
 * {@code distributedInfo} not seen by then is not in the file, as in any run without {@code torch.distributed}),
 * else skips over the events to the end. Skipping them costs about as much as reading them (a second or so for a
 * 140 MB trace), which a Kineto trace of a non-distributed run used to pay for nothing.
 *
 * <p>Bounded: at most {@link #MAX_DEVICES} devices and {@link #MAX_GROUPS} process groups are kept (the rest are
 * counted); a group's {@code ranks} list is skipped. Never throws on bad content: a truncated or invalid file
 * gives what was read before the fault.
 *
 * @param devicesListed the trace has a {@code deviceProperties} key (an empty list is "listed, none")
 * @param distributed null when the trace has no {@code distributedInfo}
 */
public record TraceMetadata(List<Device> devices, boolean devicesListed, int devicesOmitted, Distributed distributed) {
    public static final int MAX_DEVICES = 256;
    public static final int MAX_GROUPS = 256;

    /** No metadata (a bare event array, an unreadable file). */
    public static final TraceMetadata NONE = new TraceMetadata(List.of(), false, 0, null);

    private static final JsonFactory FACTORY = JsonFactory.builder()
            .disable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION)
            .build();

    public TraceMetadata {
        devices = List.copyOf(devices);
    }

    /**
     * One {@code deviceProperties} entry; fields the trace leaves out are null.
     *
     * @param name as written; blank on some ROCm builds (the vLLM MI300X traces)
     */
    public record Device(
            int id, String name, Integer sms, Long memoryBytes, Integer computeMajor, Integer computeMinor) {
        /** "NVIDIA H100 80GB HBM3", or a visible "(unnamed: deviceProperties name is blank)". */
        public String displayName() {
            return name == null || name.isBlank() ? "(unnamed: deviceProperties name is blank)" : name.trim();
        }

        /** "9.0", or null when the trace gives neither part. */
        public String computeCapability() {
            return computeMajor == null ? null : computeMajor + "." + (computeMinor == null ? "?" : computeMinor);
        }

        /** "132 SMs, 79.2 GiB, compute 9.0" (the parts the trace gives). */
        public String details() {
            List<String> parts = new ArrayList<>();
            if (sms != null) {
                parts.add(sms + " SMs");
            }
            if (memoryBytes != null) {
                parts.add(String.format(Locale.ROOT, "%.1f GiB", memoryBytes / (double) (1L << 30)));
            }
            if (computeCapability() != null) {
                parts.add("compute " + computeCapability());
            }
            return String.join(", ", parts);
        }
    }

    /** One {@code distributedInfo.pg_config} entry. */
    public record ProcessGroup(String name, String desc, String backend, Integer size) {}

    /**
     * {@code distributedInfo}: fields the trace leaves out are null.
     *
     * @param rank as written (a number or a string)
     * @param groupsOmitted groups beyond {@link #MAX_GROUPS}, counted, not kept
     */
    public record Distributed(
            String backend,
            String rank,
            Integer worldSize,
            Integer pgCount,
            String ncclVersion,
            List<ProcessGroup> groups,
            int groupsOmitted) {
        public Distributed {
            groups = List.copyOf(groups);
        }
    }

    /**
     * A parallel degree and where it came from.
     *
     * @param degree null when the trace does not say
     * @param source how it was found, or why it was not
     */
    public record Degree(Integer degree, String source) {}

    /** The device with that id, or null. */
    public Device device(Integer id) {
        if (id == null) {
            return null;
        }
        return devices.stream().filter(d -> d.id() == id).findFirst().orElse(null);
    }

    private static final Pattern TP = Pattern.compile("(^|[^a-z])(tp|tensor(_?parallel)?)([^a-z]|$)");
    private static final Pattern EP = Pattern.compile("(^|[^a-z])(ep|expert(_?parallel)?|moe)([^a-z]|$)");

    /** Tensor-parallel degree: {@link #degree(Pattern, String)} for TP. */
    public Degree tensorParallel() {
        return degree(TP, "TP");
    }

    /** Expert-parallel degree: {@link #degree(Pattern, String)} for EP. */
    public Degree expertParallel() {
        return degree(EP, "EP");
    }

    /**
     * A degree the trace states: the size of the process group whose {@code pg_desc} (else {@code pg_name}) names
     * it ({@code tp}, {@code tensor_parallel}, ...; {@code ep}, {@code expert}, {@code moe}); 1 when the world size
     * is 1 (every degree is); otherwise null, saying what the groups are called. vLLM and SGLang create their groups
     * without a description (torch writes {@code undefined}), so a multi-rank serving trace usually cannot say.
     */
    private Degree degree(Pattern pattern, String what) {
        if (distributed == null) {
            return new Degree(null, "the trace has no distributedInfo");
        }
        for (ProcessGroup g : distributed.groups()) {
            for (String label : new String[] {g.desc(), g.name()}) {
                if (label != null
                        && pattern.matcher(label.toLowerCase(Locale.ROOT)).find()
                        && g.size() != null) {
                    return new Degree(g.size(), "process group " + g.name() + " (pg_desc " + g.desc() + ")");
                }
            }
        }
        if (distributed.worldSize() != null && distributed.worldSize() == 1) {
            return new Degree(1, "world size 1");
        }
        List<String> descs = distributed.groups().stream()
                .map(g -> String.valueOf(g.desc()))
                .distinct()
                .toList();
        return new Degree(
                null,
                "not stated: no process group is named for " + what + " (world size " + distributed.worldSize() + ", "
                        + distributed.groups().size() + " group(s), pg_desc " + descs + ")");
    }

    /**
     * Where a rank ran, as this metadata says: what `analyze layers`, `kernels` and `perfetto` report and the agent
     * sends to {@code llmprof.rank-hardware}.
     *
     * @param device the device the rank's GPU events ran on (its first GPU event's; null: unknown)
     */
    public HardwareView hardware(Integer device) {
        Device d = device(device);
        String note = null;
        if (d == null) {
            List<String> names = devices.stream().map(Device::name).distinct().toList();
            List<Integer> ids = devices.stream().map(Device::id).toList();
            if (!devicesListed) {
                note = "the trace has no deviceProperties";
            } else if (device == null) {
                note = "the rank's GPU events carry no device id";
            } else if (names.size() == 1
                    && names.get(0) != null
                    && !names.get(0).isBlank()) {
                // ROCm numbers devices after the host's CPU agents (kernels on device 9, deviceProperties id 0):
                // with one model listed, that model is the rank's.
                d = devices.get(0);
                note = "device " + device + " is not among the deviceProperties ids " + ids
                        + " (ROCm counts CPU agents in device ids); every listed GPU is this model";
            } else {
                note = "device " + device + " is not among the deviceProperties ids " + ids;
            }
        } else if (d.name() == null || d.name().isBlank()) {
            note = "deviceProperties gives device " + device + " no name";
        }
        Degree tp = tensorParallel();
        Degree ep = expertParallel();
        return new HardwareView(
                device,
                d == null || d.name() == null || d.name().isBlank()
                        ? null
                        : d.name().trim(),
                note,
                d == null ? null : d.sms(),
                d == null ? null : d.memoryBytes(),
                d == null ? null : d.computeCapability(),
                devices.size() + devicesOmitted,
                distributed == null ? null : distributed.backend(),
                distributed == null ? null : distributed.rank(),
                distributed == null ? null : distributed.worldSize(),
                tp.degree(),
                tp.source(),
                ep.degree(),
                ep.source(),
                distributed == null
                        ? List.of()
                        : distributed.groups().stream()
                                .map(g -> new HardwareView.GroupView(g.name(), g.desc(), g.backend(), g.size()))
                                .toList());
    }

    /** Reads the metadata of a {@code .json} / {@code .json.gz} trace; {@link #NONE} when it cannot be opened. */
    public static TraceMetadata read(Path file) {
        try (InputStream raw = Files.newInputStream(file)) {
            return read(KinetoReader.maybeGunzip(raw));
        } catch (IOException e) {
            return NONE;
        }
    }

    static TraceMetadata read(InputStream in) {
        Builder b = new Builder();
        try (JsonParser p = FACTORY.createParser(in)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return NONE; // a bare event array has no metadata
            }
            String field;
            while ((field = p.nextFieldName()) != null) {
                JsonToken v = p.nextToken();
                if ("deviceProperties".equals(field) && v == JsonToken.START_ARRAY) {
                    b.devicesListed = true;
                    devices(p, b);
                } else if ("distributedInfo".equals(field) && v == JsonToken.START_OBJECT) {
                    b.distributed = distributed(p);
                } else if ("traceEvents".equals(field) && b.devicesListed) {
                    break; // Kineto's order: what it writes came before its events
                } else {
                    p.skipChildren();
                }
            }
        } catch (IOException | RuntimeException e) {
            // a truncated or invalid file: what was read before the fault
        }
        return b.build();
    }

    private static final class Builder {
        final List<Device> devices = new ArrayList<>();
        boolean devicesListed;
        int devicesOmitted;
        Distributed distributed;

        TraceMetadata build() {
            return new TraceMetadata(devices, devicesListed, devicesOmitted, distributed);
        }
    }

    private static void devices(JsonParser p, Builder b) throws IOException {
        JsonToken t;
        while ((t = p.nextToken()) != JsonToken.END_ARRAY && t != null) {
            if (t != JsonToken.START_OBJECT) {
                p.skipChildren();
                continue;
            }
            Integer id = null;
            Integer sms = null;
            Integer major = null;
            Integer minor = null;
            Long memory = null;
            String name = null;
            String field;
            while ((field = p.nextFieldName()) != null) {
                JsonToken v = p.nextToken();
                switch (field) {
                    case "id" -> id = intOrNull(p, v);
                    case "name" -> name = v == JsonToken.VALUE_STRING ? p.getText() : null;
                    case "numSms" -> sms = intOrNull(p, v);
                    case "totalGlobalMem" -> memory = v == JsonToken.VALUE_NUMBER_INT ? p.getLongValue() : null;
                    case "computeMajor" -> major = intOrNull(p, v);
                    case "computeMinor" -> minor = intOrNull(p, v);
                    default -> p.skipChildren();
                }
            }
            if (id == null) {
                continue;
            }
            if (b.devices.size() < MAX_DEVICES) {
                b.devices.add(new Device(id, name, sms, memory, major, minor));
            } else {
                b.devicesOmitted++;
            }
        }
    }

    private static Distributed distributed(JsonParser p) throws IOException {
        String backend = null;
        String rank = null;
        Integer world = null;
        Integer pgCount = null;
        String nccl = null;
        List<ProcessGroup> groups = new ArrayList<>();
        int omitted = 0;
        String field;
        while ((field = p.nextFieldName()) != null) {
            JsonToken v = p.nextToken();
            switch (field) {
                case "backend" -> backend = text(p, v);
                case "rank" -> rank = text(p, v);
                case "world_size" -> world = intOrNull(p, v);
                case "pg_count" -> pgCount = intOrNull(p, v);
                case "nccl_version" -> nccl = text(p, v);
                case "pg_config" -> {
                    if (v != JsonToken.START_ARRAY) {
                        p.skipChildren();
                        break;
                    }
                    JsonToken t;
                    while ((t = p.nextToken()) != JsonToken.END_ARRAY && t != null) {
                        if (t != JsonToken.START_OBJECT) {
                            p.skipChildren();
                            continue;
                        }
                        ProcessGroup g = group(p);
                        if (groups.size() < MAX_GROUPS) {
                            groups.add(g);
                        } else {
                            omitted++;
                        }
                    }
                }
                default -> p.skipChildren();
            }
        }
        return new Distributed(backend, rank, world, pgCount, nccl, groups, omitted);
    }

    private static ProcessGroup group(JsonParser p) throws IOException {
        String name = null;
        String desc = null;
        String backend = null;
        Integer size = null;
        String field;
        while ((field = p.nextFieldName()) != null) {
            JsonToken v = p.nextToken();
            switch (field) {
                case "pg_name" -> name = text(p, v);
                case "pg_desc" -> desc = text(p, v);
                case "backend_config" -> backend = text(p, v);
                case "pg_size" -> size = intOrNull(p, v);
                default -> p.skipChildren(); // ranks: up to the world size; not needed for a degree
            }
        }
        return new ProcessGroup(name, desc, backend, size);
    }

    private static Integer intOrNull(JsonParser p, JsonToken v) throws IOException {
        if (v == JsonToken.VALUE_NUMBER_INT && p.getNumberType() == JsonParser.NumberType.INT) {
            return p.getIntValue();
        }
        p.skipChildren();
        return null;
    }

    private static String text(JsonParser p, JsonToken v) throws IOException {
        if (v == JsonToken.VALUE_STRING || v == JsonToken.VALUE_NUMBER_INT || v == JsonToken.VALUE_NUMBER_FLOAT) {
            return p.getText().trim();
        }
        p.skipChildren();
        return null;
    }
}
