package io.llmprof.streams.report;

import io.llmprof.events.ConsoleOut;
import io.llmprof.events.Json;
import io.llmprof.events.view.CrossRankView;
import io.llmprof.events.view.HardwareView;
import io.llmprof.streams.boundary.ClosedPass;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Writes the {@link LayersDocument} shape with bounded memory: each closed pass is serialized as it comes
 * into a per-rank spill file, and the document is assembled from them at the end (ranks can interleave in
 * a trace, passes of one rank cannot). Same bytes as serializing a {@link LayersDocument} with
 * {@code Json.mapper()}.
 *
 * <p>A pass is serialized on a writer thread, so that the caller (an offline command's segmenters) goes on at once
 * while a second core writes: at most {@value #QUEUED} passes wait, in order, and {@link #writeDocument} waits for
 * the last. A failure to write a spill file is thrown from the next call.
 */
public final class LayersJsonWriter implements AutoCloseable {
    /** Passes waiting for the writer thread: bounds the memory they hold. */
    static final int QUEUED = 64;

    private static final Object[] STOP = new Object[0];

    private final BlockingQueue<Object[]> queue = new ArrayBlockingQueue<>(QUEUED);
    private Thread writer;
    private volatile UncheckedIOException writeFailure;

    private final Map<String, Spill> spills = new TreeMap<>();
    private final Map<String, KernelCategories> categories = new TreeMap<>();
    private final Map<String, HardwareView> hardware = new TreeMap<>();
    private final Map<String, LayerClustersView> clusters = new TreeMap<>();
    private final Map<String, PassSummary> summaries = new TreeMap<>();

    private static final class Spill {
        final Path file;
        /** UTF-8 bytes straight from Jackson's byte generator: no String and no charset encoder per pass. */
        final OutputStream out;

        boolean first = true;

        Spill(String rank) throws IOException {
            this.file = Files.createTempFile("llmprof-layers-", ".json");
            this.out = new BufferedOutputStream(Files.newOutputStream(file), 1 << 16);
        }
    }

    /** Declares a rank (so that a rank without passes still appears with an empty list). */
    public void rank(String rank) {
        spill(rank);
    }

    /** A rank's kernels by category, written after its passes. */
    public void kernelCategories(String rank, KernelCategories c) {
        spill(rank);
        categories.put(rank, c);
    }

    /** Where the rank ran (GPU, parallelism), written after its kernel categories. */
    public void hardware(String rank, HardwareView h) {
        spill(rank);
        hardware.put(rank, h);
    }

    /** The rank's cluster statistics (chosen pass, steady passes), written after its hardware. */
    public void clusters(String rank, LayerClustersView c) {
        spill(rank);
        clusters.put(rank, c);
    }

    /** The rank's one-line summary, written last. */
    public void summary(String rank, PassSummary s) {
        spill(rank);
        summaries.put(rank, s);
    }

    public void pass(String rank, ClosedPass pass) {
        rethrowWriteFailure();
        Spill s = spill(rank);
        if (writer == null) {
            writer = new Thread(this::writePasses, "layers-json-writer");
            writer.setDaemon(true);
            writer.start();
        }
        handOff(new Object[] {s, pass, rank});
    }

    /** Queues an item for the writer thread, waiting while the queue is full, but never for a thread that ended. */
    private void handOff(Object[] item) {
        try {
            while (!queue.offer(item, 100, TimeUnit.MILLISECONDS)) {
                if (!writer.isAlive()) {
                    throw new IllegalStateException("the layer report's writer thread ended early");
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while handing a pass to the report's writer thread", e);
        }
    }

    /** The writer thread: each pass into its rank's spill file, in order, until STOP. */
    private void writePasses() {
        try {
            while (true) {
                Object[] item = queue.take();
                if (item == STOP) {
                    return;
                }
                Spill s = (Spill) item[0];
                if (writeFailure != null) {
                    continue; // drain: the caller is told at its next call
                }
                try {
                    if (!s.first) {
                        s.out.write(',');
                    }
                    s.first = false;
                    s.out.write(Json.mapper().writeValueAsBytes(LayersDocument.view((ClosedPass) item[1])));
                } catch (IOException e) {
                    writeFailure = new UncheckedIOException("cannot spill passes of rank " + item[2], e);
                } catch (RuntimeException | Error e) { // out of memory included: the caller is told, not left waiting
                    writeFailure =
                            new UncheckedIOException("cannot spill passes of rank " + item[2], new IOException(e));
                }
            }
        } catch (InterruptedException e) {
            // close(): the document is not wanted any more
        }
    }

    /** Waits until the writer thread has written every pass handed to it, then stops it. */
    private void drain() {
        if (writer == null) {
            return;
        }
        try {
            handOff(STOP);
            writer.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the passes to be written", e);
        }
        writer = null;
        rethrowWriteFailure();
    }

    private void rethrowWriteFailure() {
        UncheckedIOException f = writeFailure;
        if (f != null) {
            throw f;
        }
    }

    private Spill spill(String rank) {
        return spills.computeIfAbsent(rank, r -> {
            try {
                return new Spill(r);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot create a spill file for rank " + r, e);
            }
        });
    }

    /** Writes the whole document (one line, then a newline), without cross-rank passes. */
    public void writeDocument(Writer out, String profile, String anchor, Integer numLayers, int blocksPerLayer)
            throws IOException {
        writeDocument(out, profile, anchor, numLayers, blocksPerLayer, List.of());
    }

    /** Writes the whole document (one line, then a newline); {@code crossRank} is the last key. */
    public void writeDocument(
            Writer out,
            String profile,
            String anchor,
            Integer numLayers,
            int blocksPerLayer,
            List<CrossRankView> crossRank)
            throws IOException {
        writeDocument(out, null, profile, anchor, numLayers, blocksPerLayer, crossRank);
    }

    /** As above, with an {@code input} block first (what was read, complete or not; null: none). */
    public void writeDocument(
            Writer out,
            Object input,
            String profile,
            String anchor,
            Integer numLayers,
            int blocksPerLayer,
            List<CrossRankView> crossRank)
            throws IOException {
        writeDocument(out, input, profile, anchor, numLayers, blocksPerLayer, null, null, crossRank);
    }

    /**
     * As above, with the run's {@code workload} ({@link LayersDocument#workload}) and {@code notices} (what the text
     * output's header says with "notice:": an unknown step-marker form, ranks read twice, ...) after {@code
     * blocks_per_layer}; null: no such key.
     */
    public void writeDocument(
            Writer out,
            Object input,
            String profile,
            String anchor,
            Integer numLayers,
            int blocksPerLayer,
            String workload,
            List<String> notices,
            List<CrossRankView> crossRank)
            throws IOException {
        drain();
        var m = Json.mapper();
        out.write("{" + (input == null ? "" : "\"input\":" + m.writeValueAsString(input) + ",") + "\"profile\":"
                + m.writeValueAsString(profile) + ",\"anchor\":" + m.writeValueAsString(anchor)
                + ",\"num_layers\":" + m.writeValueAsString(numLayers) + ",\"blocks_per_layer\":" + blocksPerLayer
                + (workload == null ? "" : ",\"workload\":" + m.writeValueAsString(workload))
                + (notices == null ? "" : ",\"notices\":" + m.writeValueAsString(notices))
                + ",\"ranks\":[");
        boolean firstRank = true;
        for (Map.Entry<String, Spill> e : spills.entrySet()) {
            e.getValue().out.flush();
            out.write((firstRank ? "" : ",") + "{\"rank\":" + m.writeValueAsString(e.getKey()) + ",\"passes\":[");
            firstRank = false;
            OutputStream bytes = ConsoleOut.utf8Bytes(out);
            if (bytes != null) {
                Files.copy(e.getValue().file, bytes); // the spill is UTF-8 already: no decoding and encoding again
            } else {
                try (var in = Files.newBufferedReader(e.getValue().file, StandardCharsets.UTF_8)) {
                    in.transferTo(out);
                }
            }
            out.write("]");
            KernelCategories c = categories.get(e.getKey());
            if (c != null) {
                out.write(",\"kernel_categories\":" + m.writeValueAsString(c));
            }
            HardwareView h = hardware.get(e.getKey());
            if (h != null) {
                out.write(",\"hardware\":" + m.writeValueAsString(h));
            }
            LayerClustersView cl = clusters.get(e.getKey());
            if (cl != null) {
                out.write(",\"clusters\":" + m.writeValueAsString(cl));
            }
            PassSummary su = summaries.get(e.getKey());
            if (su != null) {
                out.write(",\"summary\":" + m.writeValueAsString(su));
            }
            out.write("}");
        }
        out.write("],\"cross_rank\":" + m.writeValueAsString(crossRank) + "}\n");
        out.flush();
    }

    @Override
    public void close() {
        if (writer != null) {
            writer.interrupt();
            try {
                writer.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            writer = null;
        }
        for (Spill s : spills.values()) {
            try {
                s.out.close();
                Files.deleteIfExists(s.file);
            } catch (IOException e) {
                // a leftover temp file is harmless; nothing to report to the user
            }
        }
        spills.clear();
    }
}
