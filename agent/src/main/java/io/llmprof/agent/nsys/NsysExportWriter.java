package io.llmprof.agent.nsys;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * Writes databases shaped like {@code nsys export --type sqlite} output of Nsight Systems 2024.6 (schema 3.16):
 * the same table and column names, types and NOT NULL columns for the tables it writes ({@code
 * CUPTI_ACTIVITY_KIND_KERNEL/RUNTIME/MEMCPY/MEMSET}, {@code NVTX_EVENTS}, {@code StringIds}, {@code
 * TARGET_INFO_GPU}, {@code TARGET_INFO_SESSION_START_TIME}, {@code PROCESSES}, {@code ThreadNames}, {@code
 * META_DATA_EXPORT}), the same globalPid/globalTid layout ({@code (1 << 48) | pid << 24 [| tid]}) and names
 * interned in StringIds. One addition: the kernel table also has a {@code graphId} column (2024.6 has only
 * graphNodeId), which {@link NsysReader} reads as {@code TraceEvent.graphId}.
 *
 * <p>Fast and bounded: one transaction, prepared-statement batches, {@code journal_mode=OFF} and {@code
 * synchronous=OFF}; rows go straight to SQLite (the string cache is capped). The database is written under a
 * hidden temporary name ({@code .<name>.tmp}) and moved into place by {@link #close()}, so a watcher (which
 * takes a {@code .sqlite} without a journal as complete) never sees half a file; {@link #discard()} drops it.
 * Rows are written as given, bad ones too (an end before the start), so edge-case fixtures can be built.
 */
public final class NsysExportWriter implements AutoCloseable {
    /** The vmId bits nsys sets in every global id of the local machine. */
    public static final long VM_BITS = 1L << 48;

    /** NVTX_EVENTS.eventType of push/pop and start/end ranges. */
    public static final int NVTX_PUSH_POP = NsysReader.NVTX_PUSH_POP;

    public static final int NVTX_START_END = NsysReader.NVTX_START_END;

    /** CUpti_ActivityMemcpyKind values (ENUM_CUDA_MEMCPY_OPER). */
    public static final int COPY_HTOD = 1;

    public static final int COPY_DTOH = 2;
    public static final int COPY_DTOD = 8;

    private static final int BATCH = 4096;
    private static final int STRING_CACHE = 100_000;

    private static final String[] SCHEMA = {
        "CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT)",
        "CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT)",
        "CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT)",
        "CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER)",
        "CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT,"
                + " isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER,"
                + " clockRate INTEGER, smCount INTEGER, pwGpuId INTEGER, uuid TEXT, luid INTEGER, chipName TEXT,"
                + " cuDevice INTEGER, ctxswDevPath TEXT, ctrlDevPath TEXT, revision INTEGER, nodeMask INTEGER,"
                + " constantMemory INTEGER, maxIPC INTEGER, maxRegistersPerBlock INTEGER, maxShmemPerBlock INTEGER,"
                + " maxShmemPerBlockOptin INTEGER, maxShmemPerSm INTEGER, maxRegistersPerSm INTEGER,"
                + " threadsPerWarp INTEGER, asyncEngines INTEGER, maxWarpsPerSm INTEGER, maxBlocksPerSm INTEGER,"
                + " maxThreadsPerBlock INTEGER, maxBlockDimX INTEGER, maxBlockDimY INTEGER, maxBlockDimZ INTEGER,"
                + " maxGridDimX INTEGER, maxGridDimY INTEGER, maxGridDimZ INTEGER, computeMajor INTEGER,"
                + " computeMinor INTEGER, smMajor INTEGER, smMinor INTEGER)",
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,"
                + " eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,"
                + " returnValue INTEGER NOT NULL, callchainId INTEGER)",
        "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,"
                + " category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,"
                + " textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL,"
                + " uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT,"
                + " binaryData TEXT)",
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,"
                + " deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,"
                + " streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,"
                + " demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER,"
                + " launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,"
                + " gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL,"
                + " blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,"
                + " dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,"
                + " localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER,"
                + " graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER, graphId INTEGER)",
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,"
                + " deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,"
                + " streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL,"
                + " bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER)",
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,"
                + " deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,"
                + " streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL,"
                + " copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER,"
                + " srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER,"
                + " migrationCause INTEGER, graphNodeId INTEGER, virtualAddress INTEGER)",
    };

    private final Path file;
    private final Path temp;
    private final Connection c;
    private final PreparedStatement strings;
    private final PreparedStatement kernels;
    private final PreparedStatement runtimes;
    private final PreparedStatement nvtx;
    private final PreparedStatement memcpys;
    private final PreparedStatement memsets;
    private final Map<PreparedStatement, int[]> pending = new LinkedHashMap<>();
    private final Map<String, Long> stringIds = new HashMap<>();
    private final Map<String, String> metadata = new LinkedHashMap<>();
    private final List<Object[]> gpus = new ArrayList<>();
    private long nextStringId = 1;
    private long nextRangeId = 1;
    private long gridId = 1;
    private long rows;
    private boolean closed;
    private boolean discarded;

    private NsysExportWriter(Path file) throws IOException {
        this.file = file.toAbsolutePath().normalize();
        Path dir = this.file.getParent();
        this.temp = dir.resolve("." + this.file.getFileName() + ".tmp");
        try {
            Files.createDirectories(dir);
            Files.deleteIfExists(temp);
            c = DriverManager.getConnection("jdbc:sqlite:" + temp);
            try (Statement s = c.createStatement()) {
                s.execute("PRAGMA journal_mode=OFF");
                s.execute("PRAGMA synchronous=OFF");
                s.execute("PRAGMA cache_size=-65536");
                s.execute("PRAGMA temp_store=MEMORY");
                for (String ddl : SCHEMA) {
                    s.execute(ddl);
                }
            }
            c.setAutoCommit(false);
            strings = c.prepareStatement("INSERT INTO StringIds (id, value) VALUES (?, ?)");
            kernels = c.prepareStatement("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId,"
                    + " streamId, correlationId, globalPid, demangledName, shortName, launchType, cacheConfig,"
                    + " registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory,"
                    + " dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId, sharedMemoryExecuted,"
                    + " graphNodeId, sharedMemoryLimitConfig, graphId)"
                    + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 128, 132, 1, 1, 256, 1, 1, 0, 49152, 0, 155713536,"
                    + " ?, 65536, ?, 0, ?)");
            runtimes = c.prepareStatement("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass,"
                    + " globalTid, correlationId, nameId, returnValue) VALUES (?, ?, 0, ?, ?, ?, 0)");
            nvtx = c.prepareStatement("INSERT INTO NVTX_EVENTS (start, end, eventType, rangeId, text, globalTid,"
                    + " endGlobalTid, textId, domainId) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)");
            memcpys = c.prepareStatement("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId,"
                    + " streamId, correlationId, globalPid, bytes, copyKind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
            memsets = c.prepareStatement("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId,"
                    + " streamId, correlationId, globalPid, value, bytes) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)");
        } catch (SQLException e) {
            throw new IOException(temp + ": cannot create the SQLite export: " + e.getMessage(), e);
        }
        metadata.put("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems");
        metadata.put("EXPORT_PRODUCT_VERSION", "2024.6.2.25");
        metadata.put("EXPORT_PRODUCT_DATE", "2024.6");
        metadata.put("EXPORT_SCHEMA_VERSION", "3.16.1");
        metadata.put("EXPORT_SCHEMA_VERSION_MAJOR", "3");
        metadata.put("EXPORT_SCHEMA_VERSION_MINOR", "16");
        metadata.put("EXPORT_SCHEMA_VERSION_MICRO", "1");
        metadata.put("EXPORT_PARAM_OUTPUT_FILE", this.file.getFileName().toString());
        // Nobody should mistake a generated export for a measured one.
        metadata.put("LLMPROF_SYNTHETIC", "true");
    }

    /** Starts a new export that will appear at {@code file} (replacing it) when closed. */
    public static NsysExportWriter create(Path file) throws IOException {
        Objects.requireNonNull(file, "file");
        return new NsysExportWriter(file);
    }

    /** The serialized global id of a process, as nsys writes {@code globalPid}. */
    public static long globalPid(long pid) {
        return VM_BITS | ((pid & 0xFFFFFF) << 24);
    }

    /** The serialized global id of a thread, as nsys writes {@code globalTid}. */
    public static long globalTid(long pid, long tid) {
        return globalPid(pid) | (tid & 0xFFFFFF);
    }

    /**
     * The short name nsys derives from a demangled kernel name: no return type, no arguments or template
     * arguments, no namespace ({@code void ns::foo<int>(float*)} -> {@code foo}).
     */
    public static String shortName(String demangled) {
        String s = demangled.strip();
        if (s.startsWith("void ")) {
            s = s.substring(5);
        }
        int cut = s.length();
        for (char ch : new char[] {'(', '<'}) {
            int i = s.indexOf(ch);
            if (i > 0 && i < cut) {
                cut = i;
            }
        }
        s = s.substring(0, cut);
        int ns = s.lastIndexOf("::");
        return ns >= 0 ? s.substring(ns + 2) : s;
    }

    /** The StringIds id of {@code value}, inserting it on first use (a bounded cache keeps ids of repeats). */
    public long string(String value) throws IOException {
        Objects.requireNonNull(value, "value");
        Long id = stringIds.get(value);
        if (id != null) {
            return id;
        }
        long next = nextStringId++;
        try {
            strings.setLong(1, next);
            strings.setString(2, value);
            add(strings);
        } catch (SQLException e) {
            throw failed("StringIds", e);
        }
        if (stringIds.size() < STRING_CACHE) {
            stringIds.put(value, next);
        }
        return next;
    }

    /** A kernel launched eagerly (no graph). */
    public void kernel(
            long pid, int device, int stream, long startNs, long endNs, long correlation, String name, Long graphId)
            throws IOException {
        kernel(pid, device, stream, startNs, endNs, correlation, name, graphId, null);
    }

    /**
     * One {@code CUPTI_ACTIVITY_KIND_KERNEL} row. {@code name} is the demangled name; the short name is derived
     * ({@link #shortName}). {@code graphId}/{@code graphNodeId} are null for eager launches.
     */
    public void kernel(
            long pid,
            int device,
            int stream,
            long startNs,
            long endNs,
            long correlation,
            String name,
            Long graphId,
            Long graphNodeId)
            throws IOException {
        long demangled = string(name);
        long shortId = string(shortName(name));
        try {
            PreparedStatement p = kernels;
            p.setLong(1, startNs);
            p.setLong(2, endNs);
            p.setInt(3, device);
            p.setInt(4, device + 1);
            p.setInt(5, stream);
            p.setLong(6, correlation);
            p.setLong(7, globalPid(pid));
            p.setLong(8, demangled);
            p.setLong(9, shortId);
            p.setLong(10, gridId++);
            setLongOrNull(p, 11, graphNodeId);
            setLongOrNull(p, 12, graphId);
            add(p);
        } catch (SQLException e) {
            throw failed("CUPTI_ACTIVITY_KIND_KERNEL", e);
        }
    }

    /** One {@code CUPTI_ACTIVITY_KIND_MEMCPY} row; {@code copyKind} as CUPTI numbers it ({@link #COPY_DTOH}...). */
    public void memcpy(
            long pid, int device, int stream, long startNs, long endNs, long correlation, int copyKind, long bytes)
            throws IOException {
        try {
            PreparedStatement p = memcpys;
            p.setLong(1, startNs);
            p.setLong(2, endNs);
            p.setInt(3, device);
            p.setInt(4, device + 1);
            p.setInt(5, stream);
            p.setLong(6, correlation);
            p.setLong(7, globalPid(pid));
            p.setLong(8, bytes);
            p.setInt(9, copyKind);
            add(p);
        } catch (SQLException e) {
            throw failed("CUPTI_ACTIVITY_KIND_MEMCPY", e);
        }
    }

    /** One {@code CUPTI_ACTIVITY_KIND_MEMSET} row (value 0). */
    public void memset(long pid, int device, int stream, long startNs, long endNs, long correlation, long bytes)
            throws IOException {
        try {
            PreparedStatement p = memsets;
            p.setLong(1, startNs);
            p.setLong(2, endNs);
            p.setInt(3, device);
            p.setInt(4, device + 1);
            p.setInt(5, stream);
            p.setLong(6, correlation);
            p.setLong(7, globalPid(pid));
            p.setLong(8, bytes);
            add(p);
        } catch (SQLException e) {
            throw failed("CUPTI_ACTIVITY_KIND_MEMSET", e);
        }
    }

    /**
     * One {@code CUPTI_ACTIVITY_KIND_RUNTIME} row (eventClass 0, CUDA runtime); {@code name} is stored as given,
     * version suffix included ({@code cudaLaunchKernel_v7000}).
     */
    public void runtime(long pid, long tid, long startNs, long endNs, long correlation, String name)
            throws IOException {
        long nameId = string(name);
        try {
            PreparedStatement p = runtimes;
            p.setLong(1, startNs);
            p.setLong(2, endNs);
            p.setLong(3, globalTid(pid, tid));
            p.setLong(4, correlation);
            p.setLong(5, nameId);
            add(p);
        } catch (SQLException e) {
            throw failed("CUPTI_ACTIVITY_KIND_RUNTIME", e);
        }
    }

    /** A push/pop NVTX range; its name in {@code text}, or registered in StringIds ({@code textId}). */
    public void nvtx(long pid, long tid, long startNs, long endNs, String text, boolean viaTextId) throws IOException {
        nvtx(pid, tid, startNs, endNs, text, viaTextId, NVTX_PUSH_POP);
    }

    /**
     * An NVTX range of {@code eventType} {@link #NVTX_PUSH_POP} (59) or {@link #NVTX_START_END} (60; gets a
     * rangeId and endGlobalTid, as nsys writes them).
     */
    public void nvtx(long pid, long tid, long startNs, long endNs, String text, boolean viaTextId, int eventType)
            throws IOException {
        Long textId = viaTextId ? string(text) : null;
        try {
            PreparedStatement p = nvtx;
            long gtid = globalTid(pid, tid);
            p.setLong(1, startNs);
            p.setLong(2, endNs);
            p.setInt(3, eventType);
            if (eventType == NVTX_START_END) {
                p.setLong(4, nextRangeId++);
                p.setLong(7, gtid);
            } else {
                p.setNull(4, Types.INTEGER);
                p.setNull(7, Types.INTEGER);
            }
            if (viaTextId) {
                p.setNull(5, Types.VARCHAR);
                p.setLong(8, textId);
            } else {
                p.setString(5, text);
                p.setNull(8, Types.INTEGER);
            }
            p.setLong(6, gtid);
            add(p);
        } catch (SQLException e) {
            throw failed("NVTX_EVENTS", e);
        }
    }

    /** A {@code TARGET_INFO_GPU} row for a device id. */
    public void gpu(int deviceId, String name) {
        gpus.add(new Object[] {deviceId, name});
    }

    /** A {@code PROCESSES} row, and its main thread in {@code ThreadNames}. */
    public void process(long pid, String name) throws IOException {
        try (PreparedStatement p = c.prepareStatement("INSERT INTO PROCESSES VALUES (?, ?, ?)");
                PreparedStatement t = c.prepareStatement("INSERT INTO ThreadNames VALUES (?, 0, ?)")) {
            p.setLong(1, globalPid(pid));
            p.setLong(2, pid);
            p.setString(3, name);
            p.executeUpdate();
            t.setLong(1, string(name));
            t.setLong(2, globalTid(pid, pid));
            t.executeUpdate();
            rows += 2;
        } catch (SQLException e) {
            throw failed("PROCESSES", e);
        }
    }

    /** A {@code META_DATA_EXPORT} row (replaces a default of the same name). */
    public void metadata(String name, String value) {
        metadata.put(Objects.requireNonNull(name, "name"), value);
    }

    /** Rows written so far, all tables. */
    public long rows() {
        return rows;
    }

    /** The path the export appears at on {@link #close()}. */
    public Path file() {
        return file;
    }

    /** Drops the export: {@link #close()} deletes the temporary file instead of publishing it. */
    public void discard() {
        discarded = true;
    }

    /** Commits, closes and moves the database into place (or deletes it after {@link #discard()}). */
    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (!discarded) {
                finish();
                c.commit();
            }
        } catch (SQLException e) {
            discarded = true;
            throw failed("commit", e);
        } finally {
            try {
                c.close();
            } catch (SQLException e) {
                discarded = true;
            }
            if (discarded) {
                Files.deleteIfExists(temp);
            }
        }
        if (!discarded) {
            Files.move(temp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        }
    }

    private void finish() throws SQLException {
        for (Map.Entry<PreparedStatement, int[]> e : pending.entrySet()) {
            if (e.getValue()[0] > 0) {
                e.getKey().executeBatch();
                e.getValue()[0] = 0;
            }
        }
        try (PreparedStatement p = c.prepareStatement("INSERT INTO META_DATA_EXPORT VALUES (?, ?)")) {
            for (Map.Entry<String, String> m : metadata.entrySet()) {
                p.setString(1, m.getKey());
                p.setString(2, m.getValue());
                p.executeUpdate();
                rows++;
            }
        }
        try (Statement s = c.createStatement()) {
            // A fixed capture time, so that output never depends on the clock.
            s.execute("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1760000000000000000,"
                    + " '2025-10-09T08:53:20', '2025-10-09T08:53:20')");
            rows++;
        }
        try (PreparedStatement p = c.prepareStatement("INSERT INTO TARGET_INFO_GPU (vmId, id, name, busLocation,"
                + " isDiscrete, totalMemory, smCount, uuid, chipName, cuDevice, computeMajor, computeMinor)"
                + " VALUES (?, ?, ?, ?, 1, 150137864192, 132, ?, 'GH100', ?, 9, 0)")) {
            for (Object[] g : gpus) {
                int id = (Integer) g[0];
                p.setLong(1, VM_BITS);
                p.setInt(2, id);
                p.setString(3, (String) g[1]);
                p.setString(4, String.format(Locale.ROOT, "0000:%02x:00.0", 0x18 + id));
                p.setString(5, String.format(Locale.ROOT, "00000000-0000-0000-0000-%012x", id));
                p.setInt(6, id);
                p.executeUpdate();
                rows++;
            }
        }
        for (PreparedStatement p : List.of(strings, kernels, runtimes, nvtx, memcpys, memsets)) {
            p.close();
        }
    }

    private void add(PreparedStatement p) throws SQLException {
        p.addBatch();
        rows++;
        int[] n = pending.computeIfAbsent(p, k -> new int[1]);
        if (++n[0] >= BATCH) {
            p.executeBatch();
            n[0] = 0;
        }
    }

    private static void setLongOrNull(PreparedStatement p, int index, Long v) throws SQLException {
        if (v == null) {
            p.setNull(index, Types.INTEGER);
        } else {
            p.setLong(index, v);
        }
    }

    private IOException failed(String what, SQLException e) {
        discarded = true;
        return new IOException(temp + ": writing " + what + " failed: " + e.getMessage(), e);
    }
}
