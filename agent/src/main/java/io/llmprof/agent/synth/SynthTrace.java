package io.llmprof.agent.synth;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.zip.Deflater;
import java.util.zip.GZIPOutputStream;

/**
 * Writes synthetic Kineto traces of a decode loop: one file per rank, streamed with bounded memory (one pass of
 * every rank at a time). A file is written twice over the same deterministic simulation: first the host cpu
 * events of all passes, then the activity records, because that is how Kineto lays a file out.
 */
public final class SynthTrace {
    private static final int ESTIMATE_PASSES = 6;
    private static final int MAX_SIZE_ATTEMPTS = 6;

    private SynthTrace() {}

    /**
     * Writes the traces of {@code spec} to {@code out}: with one rank and a name ending in .json or .json.gz, that
     * file; otherwise a directory (plus {@code spec.job()} as a subdirectory) holding rank-&lt;r&gt;.pt.trace.json[.gz].
     * Each file is written under a hidden temporary name and moved into place when complete.
     */
    public static SynthResult write(SynthSpec spec, Path out) throws IOException {
        ModelConfig config = ModelConfig.read(spec.config());
        int layers = spec.layers().orElse(config.numHiddenLayers());
        PassTemplate template = DecodeModel.build(config, layers, spec.ranks(), spec.batchSize(), spec.contextLen());
        if (spec.edits().draftLayerEvery() > 0) {
            template = template.withDraftLayer();
        }
        List<Path> files = outputFiles(spec, out);
        boolean gzip = isGzip(spec, out);

        int passes = spec.passes();
        if (spec.targetSizeBytes().isPresent()) {
            passes = Math.max(
                    passes,
                    estimatePasses(spec, template, gzip, spec.targetSizeBytes().getAsLong()));
        }
        Written written = null;
        for (int attempt = 0; attempt < MAX_SIZE_ATTEMPTS; attempt++) {
            written = writeFiles(spec, template, files, gzip, passes);
            if (spec.targetSizeBytes().isEmpty()) {
                break;
            }
            long target = spec.targetSizeBytes().getAsLong();
            long smallest = written.smallestFile();
            if (smallest >= target) {
                break;
            }
            // Rare (gzip ratio drift): scale up and write again; the files must hold whole passes.
            passes =
                    (int) Math.min(Integer.MAX_VALUE, (long) Math.ceil(passes * (double) target / smallest * 1.01) + 1);
        }
        return written.result(spec, template, files, passes);
    }

    static boolean isGzip(SynthSpec spec, Path out) {
        String name = out.getFileName() == null ? "" : out.getFileName().toString();
        if (isFileName(name)) {
            return name.endsWith(".gz");
        }
        return spec.gzip();
    }

    static List<Path> outputFiles(SynthSpec spec, Path out) {
        String name = out.getFileName() == null ? "" : out.getFileName().toString();
        if (isFileName(name)) {
            if (spec.ranks() != 1) {
                throw new IllegalArgumentException(
                        "--out names one file (" + name + ") but --ranks is " + spec.ranks() + ": give a directory");
            }
            if (spec.gzip() && !name.endsWith(".gz")) {
                throw new IllegalArgumentException("--gzip needs an output name ending in .gz, got " + name);
            }
            return List.of(out);
        }
        Path dir = spec.job() == null ? out : out.resolve(spec.job());
        String suffix = spec.gzip() ? ".pt.trace.json.gz" : ".pt.trace.json";
        List<Path> files = new ArrayList<>();
        for (int r = 0; r < spec.ranks(); r++) {
            files.add(dir.resolve("rank-" + r + suffix));
        }
        return files;
    }

    private static boolean isFileName(String name) {
        return name.endsWith(".json") || name.endsWith(".json.gz");
    }

    private static int estimatePasses(SynthSpec spec, PassTemplate template, boolean gzip, long target)
            throws IOException {
        int k = Math.min(ESTIMATE_PASSES, Math.max(2, spec.passes()));
        long[] sizes = new long[2];
        for (int trial = 0; trial < 2; trial++) {
            int n = trial == 0 ? 1 : k;
            long smallest = Long.MAX_VALUE;
            CountingStream[] counters = new CountingStream[spec.ranks()];
            OutputStream[] streams = new OutputStream[spec.ranks()];
            for (int r = 0; r < spec.ranks(); r++) {
                counters[r] = new CountingStream();
                streams[r] = gzip ? gzip(counters[r]) : counters[r];
            }
            generate(spec, template, streams, n, "estimate", new ArrayList<>());
            for (CountingStream c : counters) {
                smallest = Math.min(smallest, c.count);
            }
            sizes[trial] = smallest;
        }
        double perPass = (sizes[1] - sizes[0]) / (double) (k - 1);
        double fixed = sizes[0] - perPass;
        if (perPass <= 0) {
            return spec.passes();
        }
        double needed = (target - fixed) / perPass;
        return (int) Math.min(Integer.MAX_VALUE - 1, Math.max(1, (long) Math.ceil(needed * 1.002) + 1));
    }

    private static Written writeFiles(SynthSpec spec, PassTemplate template, List<Path> files, boolean gzip, int passes)
            throws IOException {
        int ranks = spec.ranks();
        Path[] temps = new Path[ranks];
        OutputStream[] streams = new OutputStream[ranks];
        List<List<PassTruth>> truths = new ArrayList<>();
        try {
            for (int r = 0; r < ranks; r++) {
                Path file = files.get(r);
                Path dir = file.toAbsolutePath().getParent();
                Files.createDirectories(dir);
                temps[r] = dir.resolve("." + file.getFileName() + ".tmp");
                OutputStream raw = Files.newOutputStream(temps[r]);
                streams[r] = gzip ? gzip(raw) : raw;
            }
            generate(spec, template, streams, passes, null, truths);
            long[] sizes = new long[ranks];
            for (int r = 0; r < ranks; r++) {
                Files.move(temps[r], files.get(r), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                temps[r] = null;
                sizes[r] = Files.size(files.get(r));
            }
            return new Written(sizes, truths);
        } finally {
            for (int r = 0; r < ranks; r++) {
                if (temps[r] != null) {
                    closeQuietly(streams[r]);
                    Files.deleteIfExists(temps[r]);
                }
            }
        }
    }

    /** The two sweeps over one simulation: host events, then activity; closes the streams. */
    private static void generate(
            SynthSpec spec,
            PassTemplate template,
            OutputStream[] streams,
            int passes,
            String nameOverride,
            List<List<PassTruth>> truths)
            throws IOException {
        int ranks = spec.ranks();
        boolean graph = spec.launch() == LaunchMode.GRAPH;
        int buffer = ranks <= 4 ? 4 << 20 : 1 << 20;
        JsonSink[] sinks = new JsonSink[ranks];
        KinetoWriter[] writers = new KinetoWriter[ranks];
        int threads = Math.min(ranks, Runtime.getRuntime().availableProcessors());
        // The simulation is lockstep (collectives); formatting each rank's file is independent.
        ExecutorService pool = threads > 1 ? Executors.newFixedThreadPool(threads, SynthTrace::daemon) : null;
        try {
            for (int r = 0; r < ranks; r++) {
                sinks[r] = new JsonSink(streams[r], buffer);
                writers[r] = new KinetoWriter(sinks[r], spec, template, r);
                writers[r].header(traceId(spec, r));
                truths.add(new ArrayList<>(Math.min(passes, 1 << 16)));
            }
            PassSimulator hostSweep = new PassSimulator(spec, template);
            for (int p = 0; p < passes; p++) {
                RankPass[] rps = hostSweep.next();
                ranksDo(pool, ranks, r -> writers[r].host(rps[r], graph));
            }
            PassSimulator activitySweep = new PassSimulator(spec, template);
            long[] end = new long[ranks];
            for (int p = 0; p < passes; p++) {
                RankPass[] rps = activitySweep.next();
                ranksDo(pool, ranks, r -> writers[r].activity(rps[r], graph));
                for (int r = 0; r < ranks; r++) {
                    truths.get(r).add(rps[r].truth(spec));
                    end[r] = rps[r].stepEnd;
                }
            }
            for (int r = 0; r < ranks; r++) {
                String name = nameOverride != null
                        ? nameOverride
                        : "/tmp/llmprof-synth/" + (spec.job() == null ? "" : spec.job() + "/") + "rank-" + r
                                + ".pt.trace.json";
                writers[r].footer(activitySweep.startNs(r) - 25_000, end[r], name);
            }
        } finally {
            if (pool != null) {
                pool.shutdownNow();
            }
            IOException failure = null;
            for (int r = 0; r < ranks; r++) {
                try {
                    if (sinks[r] != null) {
                        sinks[r].close();
                    } else {
                        streams[r].close();
                    }
                } catch (IOException e) {
                    failure = failure == null ? e : failure;
                }
            }
            if (failure != null) {
                throw failure;
            }
        }
    }

    private interface RankWork {
        void run(int rank) throws IOException;
    }

    private static void ranksDo(ExecutorService pool, int ranks, RankWork work) throws IOException {
        if (pool == null) {
            for (int r = 0; r < ranks; r++) {
                work.run(r);
            }
            return;
        }
        List<Callable<Void>> tasks = new ArrayList<>(ranks);
        for (int r = 0; r < ranks; r++) {
            int rank = r;
            tasks.add(() -> {
                work.run(rank);
                return null;
            });
        }
        try {
            for (Future<Void> done : pool.invokeAll(tasks)) {
                done.get();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while writing traces");
        } catch (ExecutionException e) {
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw new IllegalStateException(e.getCause());
        }
    }

    private static Thread daemon(Runnable task) {
        Thread thread = new Thread(task, "llmprof-synth-writer");
        thread.setDaemon(true);
        return thread;
    }

    private static String traceId(SynthSpec spec, int rank) {
        Rng rng = Rng.of(spec.seed(), rank, -7);
        return String.format(Locale.ROOT, "%016X%016X", rng.nextLong(), rng.nextLong());
    }

    private static OutputStream gzip(OutputStream raw) throws IOException {
        return new GZIPOutputStream(raw, 1 << 16) {
            {
                def.setLevel(Deflater.BEST_SPEED);
            }
        };
    }

    private static void closeQuietly(OutputStream stream) {
        if (stream == null) {
            return;
        }
        try {
            stream.close();
        } catch (IOException e) {
            // the temporary file is deleted next; the original failure is what the caller needs
        }
    }

    private record Written(long[] sizes, List<List<PassTruth>> passTruths) {
        long smallestFile() {
            long min = Long.MAX_VALUE;
            for (long s : sizes) {
                min = Math.min(min, s);
            }
            return min;
        }

        SynthResult result(SynthSpec spec, PassTemplate t, List<Path> files, int passes) {
            List<RankTruth> ranks = new ArrayList<>();
            long total = 0;
            List<String> names = t.kernelNames();
            boolean graph = spec.launch() == LaunchMode.GRAPH;
            for (int r = 0; r < spec.ranks(); r++) {
                total += sizes[r];
                ranks.add(new RankTruth(
                        r,
                        files.get(r),
                        sizes[r],
                        r % 8,
                        KinetoWriter.hostPid(spec, r),
                        passes,
                        t.profile.id,
                        t.profile.anchorPattern,
                        t.anchorKernel,
                        t.profile.role,
                        t.profile.blocksPerLayer(),
                        t.profile.halfLabels,
                        t.layers,
                        t.mainKernels,
                        t.prologueKernels,
                        t.epilogueKernels,
                        t.anchors,
                        t.allReduces,
                        2,
                        graph ? 1 : t.mainKernels,
                        t.layerTruths,
                        names,
                        passTruths.get(r)));
            }
            return new SynthResult(ranks, passes, total);
        }
    }

    private static final class CountingStream extends OutputStream {
        long count;

        @Override
        public void write(int b) {
            count++;
        }

        @Override
        public void write(byte[] b, int off, int len) {
            count += len;
        }
    }
}
