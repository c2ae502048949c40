package io.llmprof.streams.boundary;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.ProtocolStringList;
import io.llmprof.streams.category.LaunchContextState;
import io.llmprof.streams.state.proto.LaunchContextProto;
import io.llmprof.streams.state.proto.LongRows;
import io.llmprof.streams.state.proto.SegmenterStateProto;
import io.llmprof.streams.state.proto.StepStateProto;
import io.llmprof.streams.state.proto.StepTrackerStateProto;
import java.util.ArrayList;
import java.util.List;

/**
 * The state-store form of a {@link SegmenterState}: the {@code SegmenterStateProto} message of {@code
 * llmprof_state.proto}, field by field. Compact rows are packed sint64 with the start column delta-coded, so an
 * open-pass row of six longs takes about ten bytes.
 *
 * <p>Format 3 is the protobuf layout. A value of the hand-written formats 1 and 2 of earlier releases (first byte
 * 1 or 2; a protobuf value begins with 0x08) still decodes through {@link LegacySegmenterStateCodec}; any other
 * value is refused with an {@link IllegalArgumentException}, never guessed.
 */
public final class SegmenterStateCodec {
    /** Format 3: the protobuf layout written by {@link #encode}. */
    public static final int FORMAT = 3;

    private SegmenterStateCodec() {}

    public static byte[] encode(SegmenterState s) {
        SegmenterStateProto.Builder b = SegmenterStateProto.newBuilder()
                .setFormat(FORMAT)
                .setDetecting(s.detecting())
                .setNextPassIndex(s.nextPassIndex())
                .setSeenAny(s.seenAny())
                .setMaxEndNs(s.maxEndNs())
                .setLastStartNs(s.lastStartNs())
                .addAllWarmupNames(s.warmupNames())
                .setWarmup(rows(s.warmup(), LongRows.newBuilder(), Rows.W_START))
                .addAllCategories(s.categories())
                .setOpen(rows(s.open(), LongRows.newBuilder(), Rows.START))
                .setHasPredecessor(s.hasPredecessor())
                .setRecentComplete(rows(s.recentComplete(), LongRows.newBuilder(), -1))
                .addAllPendingNotes(s.pendingNotes())
                .addAllFamilies(s.families())
                .setSteps(steps(s.steps()))
                .setLaunchContext(launchContext(s.launchContext()));
        if (s.job() != null) {
            b.setJob(s.job());
        }
        if (s.run() != null) {
            b.setRun(s.run());
        }
        if (s.rank() != null) {
            b.setRank(s.rank());
        }
        if (s.anchor() != null) {
            b.setAnchor(s.anchor());
        }
        if (s.numLayers() != null) {
            b.setNumLayers(s.numLayers());
        }
        for (long m : s.gapMedians()) {
            b.addGapMedians(m);
        }
        return b.build().toByteArray();
    }

    private static LaunchContextProto launchContext(LaunchContextState c) {
        return LaunchContextProto.newBuilder()
                .addAllCategories(c.categories())
                .setFrames(rows(c.frames(), LongRows.newBuilder(), 1))
                .setLaunches(rows(c.launches(), LongRows.newBuilder(), 0))
                .setRecentOps(rows(c.recentOps(), LongRows.newBuilder(), 0))
                .setLearned(rows(c.learned(), LongRows.newBuilder(), -1))
                .setMaxDelivered(c.maxDelivered())
                .setHostWatermarkNs(c.hostWatermarkNs())
                .setLatestKernelStartNs(c.latestKernelStartNs())
                .setLost(c.lost())
                .addAllTallies(c.tallies())
                .setByCategory(rows(c.byCategory(), LongRows.newBuilder(), -1))
                .build();
    }

    private static LaunchContextState launchContext(LaunchContextProto p) {
        return new LaunchContextState(
                strings(p.getCategoriesList()),
                rows(p.getFrames(), 1),
                rows(p.getLaunches(), 0),
                rows(p.getRecentOps(), 0),
                rows(p.getLearned(), -1),
                p.getMaxDelivered(),
                p.hasLatestKernelStartNs() ? p.getLatestKernelStartNs() : Long.MIN_VALUE,
                p.hasHostWatermarkNs() ? p.getHostWatermarkNs() : Long.MIN_VALUE,
                p.getLost(),
                p.getTalliesList(),
                rows(p.getByCategory(), -1));
    }

    private static StepStateProto steps(StepState st) {
        StepTrackerState t = st.tracker();
        StepTrackerStateProto tracker = StepTrackerStateProto.newBuilder()
                .setHostSeen(t.hostSeen())
                .setHostEnded(t.hostEnded())
                .setGpuEnded(t.gpuEnded())
                .setMarkersSeen(t.markersSeen())
                .setHostWatermarkNs(t.hostWatermarkNs())
                .setGpuWatermarkNs(t.gpuWatermarkNs())
                .setLaunchSeen(t.launchSeen())
                .setMinLaunch(t.minLaunch())
                .setMaxLaunch(t.maxLaunch())
                .setNextId(t.nextId())
                .setLastResolvedStep(t.lastResolvedStep())
                .setDroppedHi(t.droppedHi())
                .setHostMarkers(rows(t.hostMarkers(), LongRows.newBuilder(), StepTracker.H_START))
                .addAllHostTexts(t.hostTexts())
                .setGpuSteps(rows(t.gpuSteps(), LongRows.newBuilder(), StepTracker.G_START))
                .addAllGpuTexts(t.gpuTexts())
                .addAllUnknownForms(t.unknownForms())
                .setTrainingSeen(t.trainingSeen())
                .setStepWork(rows(t.stepWork(), LongRows.newBuilder(), -1))
                .build();
        StepStateProto.Builder b = StepStateProto.newBuilder()
                .setTracker(tracker)
                .setTraceStartNs(st.traceStartNs())
                .addAllPendingNames(st.pendingNames())
                .setPending(rows(st.pending(), LongRows.newBuilder(), Rows.W_START))
                .setOpenStep(st.openStep())
                .addAllWarmupStepTexts(st.warmupStepTexts())
                .setAwaitingHost(st.awaitingHost());
        if (st.openStepText() != null) {
            b.setOpenStepText(st.openStepText());
        }
        for (long id : st.warmupStepIds()) {
            b.addWarmupStepIds(id);
        }
        for (long c : st.noteCounts()) {
            b.addNoteCounts(c);
        }
        for (long id : st.closedSteps()) {
            b.addClosedSteps(id);
        }
        return b.build();
    }

    /** @throws IllegalArgumentException when {@code bytes} is not a segmenter state of a known format */
    public static SegmenterState decode(byte[] bytes) {
        if (bytes.length > 0 && (bytes[0] == 1 || bytes[0] == LegacySegmenterStateCodec.VERSION)) {
            return LegacySegmenterStateCodec.decode(bytes);
        }
        SegmenterStateProto p;
        try {
            p = SegmenterStateProto.parseFrom(bytes);
        } catch (InvalidProtocolBufferException e) {
            throw new IllegalArgumentException(
                    "truncated or corrupt segmenter state (" + bytes.length + " bytes): " + e.getMessage(), e);
        }
        if (p.getFormat() != FORMAT) {
            throw new IllegalArgumentException("not a segmenter state of format 1, 2 or " + FORMAT + " (format "
                    + p.getFormat() + ", " + bytes.length + " bytes)");
        }
        try {
            return new SegmenterState(
                    p.hasJob() ? p.getJob() : null,
                    p.hasRun() ? p.getRun() : null,
                    p.hasRank() ? p.getRank() : null,
                    p.hasAnchor() ? p.getAnchor() : null,
                    p.hasNumLayers() ? p.getNumLayers() : null,
                    p.getDetecting(),
                    p.getNextPassIndex(),
                    p.getSeenAny(),
                    p.getMaxEndNs(),
                    p.getLastStartNs(),
                    strings(p.getWarmupNamesList()),
                    rows(p.getWarmup(), Rows.W_START),
                    strings(p.getCategoriesList()),
                    rows(p.getOpen(), Rows.START),
                    p.getHasPredecessor(),
                    p.getGapMediansList(),
                    rows(p.getRecentComplete(), -1),
                    strings(p.getPendingNotesList()),
                    strings(p.getFamiliesList()),
                    steps(p.getSteps()),
                    p.hasLaunchContext() ? launchContext(p.getLaunchContext()) : LaunchContextState.EMPTY);
        } catch (IllegalArgumentException | IndexOutOfBoundsException e) {
            throw new IllegalArgumentException("inconsistent segmenter state: " + e.getMessage(), e);
        }
    }

    private static StepState steps(StepStateProto p) {
        StepTrackerStateProto t = p.getTracker();
        StepTrackerState tracker = new StepTrackerState(
                t.getHostSeen(),
                t.getHostEnded(),
                t.getGpuEnded(),
                t.getMarkersSeen(),
                t.getHostWatermarkNs(),
                t.getGpuWatermarkNs(),
                t.getLaunchSeen(),
                t.getMinLaunch(),
                t.getMaxLaunch(),
                t.getNextId(),
                t.getLastResolvedStep(),
                t.getDroppedHi(),
                rows(t.getHostMarkers(), StepTracker.H_START),
                strings(t.getHostTextsList()),
                rows(t.getGpuSteps(), StepTracker.G_START),
                strings(t.getGpuTextsList()),
                strings(t.getUnknownFormsList()),
                t.getTrainingSeen(),
                rows(t.getStepWork(), -1));
        return new StepState(
                tracker,
                p.getTraceStartNs(),
                strings(p.getPendingNamesList()),
                rows(p.getPending(), Rows.W_START),
                p.getOpenStep(),
                p.hasOpenStepText() ? p.getOpenStepText() : null,
                p.getWarmupStepIdsList(),
                strings(p.getWarmupStepTextsList()),
                p.getNoteCountsList(),
                p.getAwaitingHost(),
                p.getClosedStepsList());
    }

    private static List<String> strings(ProtocolStringList list) {
        return list;
    }

    /** Rows of any width, row-major; column {@code deltaColumn} (if >= 0) as the difference from the previous row's. */
    static LongRows rows(List<long[]> rows, LongRows.Builder b, int deltaColumn) {
        int n = rows.size();
        b.setCount(n);
        if (n == 0) {
            return b.build();
        }
        int width = rows.get(0).length;
        boolean uniform = true;
        for (long[] row : rows) {
            uniform &= row.length == width;
        }
        if (uniform) {
            b.setWidth(width);
        } else {
            for (long[] row : rows) {
                b.addWidths(row.length);
            }
        }
        long prev = 0;
        for (long[] row : rows) {
            for (int i = 0; i < row.length; i++) {
                if (i == deltaColumn) {
                    b.addValues(row[i] - prev);
                    prev = row[i];
                } else {
                    b.addValues(row[i]);
                }
            }
        }
        return b.build();
    }

    static List<long[]> rows(LongRows p, int deltaColumn) {
        int n = p.getCount();
        boolean uniform = p.getWidthsCount() == 0;
        if (!uniform && p.getWidthsCount() != n) {
            throw new IllegalArgumentException(n + " rows with " + p.getWidthsCount() + " widths");
        }
        List<long[]> out = new ArrayList<>(n);
        int at = 0;
        long prev = 0;
        for (int r = 0; r < n; r++) {
            int width = uniform ? p.getWidth() : p.getWidths(r);
            if (width < 0 || width > p.getValuesCount() - at) {
                throw new IllegalArgumentException(
                        "row " + r + " of width " + width + " runs past " + p.getValuesCount() + " values");
            }
            long[] row = new long[width];
            for (int i = 0; i < width; i++) {
                long v = p.getValues(at++);
                if (i == deltaColumn) {
                    v += prev;
                    prev = v;
                }
                row[i] = v;
            }
            out.add(row);
        }
        if (at != p.getValuesCount()) {
            throw new IllegalArgumentException((p.getValuesCount() - at) + " values past the last row");
        }
        return out;
    }
}
