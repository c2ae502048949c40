package io.llmprof.agent.kineto;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.GZIPOutputStream;

/** Writes tiny trace files for tests. */
public final class Fixtures {
    private Fixtures() {}

    public static Path write(Path dir, String name, String json) throws IOException {
        Path file = dir.resolve(name);
        Files.createDirectories(file.getParent());
        if (name.endsWith(".gz")) {
            try (OutputStream out = new GZIPOutputStream(Files.newOutputStream(file))) {
                out.write(json.getBytes(StandardCharsets.UTF_8));
            }
        } else {
            Files.writeString(file, json);
        }
        return file;
    }

    /** A kernel event on device 0, stream 7. */
    public static String kernel(String name, String ts, String dur, long correlation) {
        return """
                {"ph": "X", "cat": "kernel", "name": "%s", "pid": 0, "tid": 7, "ts": %s, "dur": %s,
                 "args": {"device": 0, "stream": 7, "correlation": %d, "grid": [1, 1, 1]}}"""
                .formatted(name, ts, dur, correlation);
    }

    /** A kernel event without ts: the reader reports it as MISSING_TS and skips it. */
    public static String kernelWithoutTs(String name, long correlation) {
        return """
                {"ph": "X", "cat": "kernel", "name": "%s", "pid": 0, "tid": 7, "dur": 1,
                 "args": {"device": 0, "stream": 7, "correlation": %d}}"""
                .formatted(name, correlation);
    }

    /**
     * A rank-0 trace of {@code pairs} (cpu_op, kernel) pairs with {@code bad} kernels without ts spread evenly
     * after them, named {@code bad0}, {@code bad1}, ... in file order.
     */
    public static String traceWithBadEvents(int pairs, int bad) {
        StringBuilder json = new StringBuilder("{\"distributedInfo\": {\"rank\": 0}, \"traceEvents\": [");
        int written = 0;
        for (int i = 0; i < pairs; i++) {
            json.append(i == 0 ? "" : ",")
                    .append(cpuOp("op" + i, Long.toString(1000 + i), "1", i, "[[1]]"))
                    .append(",")
                    .append(kernel("k" + i, Long.toString(2000 + i), "1", i));
            for (long upTo = (long) (i + 1) * bad / pairs; written < upTo; written++) {
                json.append(",").append(kernelWithoutTs("bad" + written, 100_000 + written));
            }
        }
        return json.append("]}").toString();
    }

    public static String runtime(String name, String ts, String dur, long correlation, long externalId) {
        return """
                {"ph": "X", "cat": "cuda_runtime", "name": "%s", "pid": 4242, "tid": 4243, "ts": %s, "dur": %s,
                 "args": {"cbid": 211, "correlation": %d, "External id": %d}}"""
                .formatted(name, ts, dur, correlation, externalId);
    }

    public static String cpuOp(String name, String ts, String dur, long externalId, String inputDims) {
        return """
                {"ph": "X", "cat": "cpu_op", "name": "%s", "pid": 4242, "tid": 4243, "ts": %s, "dur": %s,
                 "args": {"External id": %d, "Input Dims": %s, "Input type": ["float"]}}"""
                .formatted(name, ts, dur, externalId, inputDims);
    }

    /** A small but complete Kineto trace: 2 cpu_ops, 2 launches, 3 kernels, a memcpy, annotations, noise. */
    public static String smallTrace(String distributedInfo) {
        return """
                {
                  "schemaVersion": 1,
                  %s
                  "deviceProperties": [{"id": 0, "name": "H100"}],
                  "traceEvents": [
                    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 4242, "tid": 4243,
                     "ts": 100, "dur": 900, "args": {"External id": 1}},
                    %s,
                    %s,
                    %s,
                    {"ph": "X", "cat": "python_function", "name": "model.py(12): forward", "pid": 4242, "tid": 4243,
                     "ts": 101, "dur": 5, "args": {"Python id": 3}},
                    {"ph": "s", "id": 11, "pid": 4242, "tid": 4243, "ts": 111, "cat": "ac2g", "name": "ac2g"},
                    %s,
                    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 4242, "tid": 4243, "ts": 125},
                    %s,
                    %s,
                    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 150, "dur": 2,
                     "args": {"device": 0, "stream": 7, "correlation": 13}},
                    %s,
                    {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#1", "pid": 0, "tid": 7,
                     "ts": 115, "dur": 600, "args": {"External id": 1}},
                    {"name": "process_name", "ph": "M", "ts": 100, "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
                    {"ph": "X", "cat": "Trace", "ts": 100, "dur": 900, "pid": "Spans", "tid": "PyTorch Profiler",
                     "name": "PyTorch Profiler (0)", "args": {"Op count": 0}}
                  ],
                  "traceName": "x"
                }
                """
                .formatted(
                        distributedInfo,
                        cpuOp("aten::mm", "110", "20", 2, "[[16, 1024], [1024, 4096]]"),
                        runtime("cudaLaunchKernel", "111", "4", 11, 2),
                        cpuOp("aten::add", "130", "10", 3, "[[16, 4096], [], []]"),
                        runtime("cudaLaunchKernel", "131", "3", 12, 3),
                        kernel("gemm_a", "200", "50", 11),
                        kernel("add_b", "260", "5", 12),
                        kernel("gemm_a", "270", "50", 14));
    }

    /**
     * A rank-0 trace of {@code n} cpu_ops in time order, their {@code n} kernels, then the {@code n} runtime launches
     * that came between the cpu_ops and the kernels: the layout of vLLM's graph-capture traces, whose launches are
     * tens of thousands of entries late. As read within a window smaller than {@code n}, the launches are late.
     */
    public static String launchesWrittenLast(int n) {
        java.util.List<String> entries = new java.util.ArrayList<>();
        for (int i = 0; i < n; i++) {
            entries.add(cpuOp("op" + i, Long.toString(1_000 + 10L * i), "5", i, "[[1]]"));
        }
        for (int i = 0; i < n; i++) {
            entries.add(kernel("k" + i, Long.toString(1_000 + 10L * n + 10L * i), "5", i));
        }
        for (int i = 0; i < n; i++) {
            entries.add(runtime("cudaLaunchKernel", Long.toString(1_002 + 10L * i), "2", i, i));
        }
        return "{\"distributedInfo\": {\"rank\": 0}, \"traceEvents\": [" + String.join(",", entries) + "]}";
    }
}
