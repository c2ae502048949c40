package io.llmprof.events.wire;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import io.llmprof.events.host.HostAssessment;
import io.llmprof.events.host.HostDrillDown;
import io.llmprof.events.host.HostMetrics;
import io.llmprof.events.host.HostSums;
import io.llmprof.events.host.HostThresholds;
import io.llmprof.events.host.HostVerdict;
import io.llmprof.events.host.HostVote;
import io.llmprof.events.wire.proto.EagerKernelOut;
import io.llmprof.events.wire.proto.EagerKernelsOut;
import io.llmprof.events.wire.proto.FindingOut;
import io.llmprof.events.wire.proto.GraphCoverageOut;
import io.llmprof.events.wire.proto.HostAssessmentOut;
import io.llmprof.events.wire.proto.HostDrillDownOut;
import io.llmprof.events.wire.proto.HostMetricsOut;
import io.llmprof.events.wire.proto.HostSumsOut;
import io.llmprof.events.wire.proto.HostThresholdsOut;
import io.llmprof.events.wire.proto.HostVerdictOut;
import io.llmprof.events.wire.proto.HostVoteOut;
import io.llmprof.events.wire.proto.LaunchStatOut;
import io.llmprof.events.wire.proto.StreamGapsOut;
import io.llmprof.events.wire.proto.TopGapOut;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * {@link HostVerdict} as {@code HostVerdictOut}, through the generated classes rather than field by field as {@link
 * OutputRecordSerde}'s busier records: a verdict goes out at most once per phase and input batch, and nests four
 * levels deep (drill-down, stream gaps, top gaps), where the builders cost little and the generated parser's rules
 * (a repeated nested message merges into the one before, unknown fields skipped) need no second reader to agree
 * with. A null field of the record is an absent {@code optional} field or message.
 */
final class HostVerdictWire {
    private HostVerdictWire() {}

    static void write(HostVerdict v, CodedOutputStream out) throws IOException {
        toProto(v).writeTo(out);
    }

    static HostVerdict read(CodedInputStream in) throws IOException {
        return fromProto(HostVerdictOut.parseFrom(in));
    }

    static HostVerdictOut toProto(HostVerdict v) {
        HostVerdictOut.Builder b =
                HostVerdictOut.newBuilder().setFirstIndex(v.firstIndex()).setLastIndex(v.lastIndex());
        set(v.job(), b::setJob);
        set(v.run(), b::setRun);
        set(v.rank(), b::setRank);
        set(v.phase(), b::setPhase);
        if (v.sums() != null) {
            b.setSums(sums(v.sums()));
        }
        if (v.thresholds() != null) {
            HostThresholds t = v.thresholds();
            b.setThresholds(HostThresholdsOut.newBuilder()
                    .setM1(t.m1())
                    .setM2(t.m2())
                    .setM3A(t.m3a())
                    .setM3B(t.m3b())
                    .setM3C(t.m3c())
                    .setM4(t.m4())
                    .setM5(t.m5()));
        }
        if (v.assessment() != null) {
            b.setAssessment(assessment(v.assessment()));
        }
        if (v.drilldown() != null) {
            b.setDrilldown(drilldown(v.drilldown()));
        }
        return b.build();
    }

    static HostVerdict fromProto(HostVerdictOut p) {
        HostThresholds thresholds = null;
        if (p.hasThresholds()) {
            HostThresholdsOut t = p.getThresholds();
            thresholds =
                    new HostThresholds(t.getM1(), t.getM2(), t.getM3A(), t.getM3B(), t.getM3C(), t.getM4(), t.getM5());
        }
        return new HostVerdict(
                p.hasJob() ? p.getJob() : null,
                p.hasRun() ? p.getRun() : null,
                p.hasRank() ? p.getRank() : null,
                p.hasPhase() ? p.getPhase() : null,
                p.getFirstIndex(),
                p.getLastIndex(),
                p.hasSums() ? sums(p.getSums()) : null,
                thresholds,
                p.hasAssessment() ? assessment(p.getAssessment()) : null,
                p.hasDrilldown() ? drilldown(p.getDrilldown()) : null);
    }

    private static void set(String value, Consumer<String> setter) {
        if (value != null) {
            setter.accept(value);
        }
    }

    private static HostSumsOut sums(HostSums s) {
        return HostSumsOut.newBuilder()
                .setSteps(s.steps())
                .setWindowNs(s.windowNs())
                .setBusyNs(s.busyNs())
                .setLaunchNs(s.launchNs())
                .setLaunchCalls(s.launchCalls())
                .setApiCalls(s.apiCalls())
                .setPrepNs(s.prepNs())
                .setExposedNs(s.exposedNs())
                .setCommNs(s.commNs())
                .setKernels(s.kernels())
                .setGraphKernels(s.graphKernels())
                .setMemops(s.memops())
                .build();
    }

    private static HostSums sums(HostSumsOut s) {
        return new HostSums(
                s.getSteps(),
                s.getWindowNs(),
                s.getBusyNs(),
                s.getLaunchNs(),
                s.getLaunchCalls(),
                s.getApiCalls(),
                s.getPrepNs(),
                s.getExposedNs(),
                s.getCommNs(),
                s.getKernels(),
                s.getGraphKernels(),
                s.getMemops());
    }

    private static HostMetricsOut metrics(HostMetrics m) {
        HostMetricsOut.Builder b = HostMetricsOut.newBuilder();
        if (m.gpuIdleRatio() != null) {
            b.setGpuIdleRatio(m.gpuIdleRatio());
        }
        if (m.launchOverheadRatio() != null) {
            b.setLaunchOverheadRatio(m.launchOverheadRatio());
        }
        if (m.hostPrepExposedRatio() != null) {
            b.setHostPrepExposedRatio(m.hostPrepExposedRatio());
        }
        if (m.hostPrepPerfImpact() != null) {
            b.setHostPrepPerfImpact(m.hostPrepPerfImpact());
        }
        if (m.hostPrepIdleAttribution() != null) {
            b.setHostPrepIdleAttribution(m.hostPrepIdleAttribution());
        }
        if (m.gpuUtilization() != null) {
            b.setGpuUtilization(m.gpuUtilization());
        }
        if (m.ncclRatio() != null) {
            b.setNcclRatio(m.ncclRatio());
        }
        if (m.graphCoverage() != null) {
            b.setGraphCoverage(m.graphCoverage());
        }
        return b.build();
    }

    private static HostMetrics metrics(HostMetricsOut m) {
        return new HostMetrics(
                m.hasGpuIdleRatio() ? m.getGpuIdleRatio() : null,
                m.hasLaunchOverheadRatio() ? m.getLaunchOverheadRatio() : null,
                m.hasHostPrepExposedRatio() ? m.getHostPrepExposedRatio() : null,
                m.hasHostPrepPerfImpact() ? m.getHostPrepPerfImpact() : null,
                m.hasHostPrepIdleAttribution() ? m.getHostPrepIdleAttribution() : null,
                m.hasGpuUtilization() ? m.getGpuUtilization() : null,
                m.hasNcclRatio() ? m.getNcclRatio() : null,
                m.hasGraphCoverage() ? m.getGraphCoverage() : null);
    }

    private static HostAssessmentOut assessment(HostAssessment a) {
        HostAssessmentOut.Builder b = HostAssessmentOut.newBuilder()
                .addAllCrossedKeys(a.crossed())
                .setCrossedCount(a.crossedCount())
                .setApplicableCount(a.applicableCount())
                .setHostPrepConfirmed(a.hostPrepConfirmed())
                .setNcclCaveat(a.ncclCaveat());
        if (a.metrics() != null) {
            b.setMetrics(metrics(a.metrics()));
        }
        set(a.verdict(), b::setVerdict);
        set(a.llmprofVerdict(), b::setLlmprofVerdict);
        for (HostVote vote : a.votes()) {
            HostVoteOut.Builder v = HostVoteOut.newBuilder()
                    .addAllMetrics(vote.metrics())
                    .setApplicable(vote.applicable())
                    .setCrossed(vote.crossed());
            set(vote.name(), v::setName);
            b.addVotes(v);
        }
        return b.build();
    }

    private static HostAssessment assessment(HostAssessmentOut a) {
        List<HostVote> votes = new ArrayList<>(a.getVotesCount());
        for (HostVoteOut v : a.getVotesList()) {
            votes.add(new HostVote(
                    v.hasName() ? v.getName() : null, v.getMetricsList(), v.getApplicable(), v.getCrossed()));
        }
        return new HostAssessment(
                a.hasMetrics() ? metrics(a.getMetrics()) : null,
                a.getCrossedKeysList(),
                a.getCrossedCount(),
                a.getApplicableCount(),
                a.hasVerdict() ? a.getVerdict() : null,
                a.hasLlmprofVerdict() ? a.getLlmprofVerdict() : null,
                votes,
                a.getHostPrepConfirmed(),
                a.getNcclCaveat());
    }

    private static HostDrillDownOut drilldown(HostDrillDown d) {
        HostDrillDownOut.Builder b = HostDrillDownOut.newBuilder();
        for (HostDrillDown.StreamGaps g : d.gaps()) {
            StreamGapsOut.Builder s =
                    StreamGapsOut.newBuilder().addAllCounts(g.counts()).setTotalNs(g.totalNs());
            if (g.device() != null) {
                s.setDevice(g.device());
            }
            if (g.stream() != null) {
                s.setStream(g.stream());
            }
            for (HostDrillDown.TopGap t : g.top()) {
                TopGapOut.Builder o = TopGapOut.newBuilder()
                        .setStartNs(t.startNs())
                        .setEndNs(t.endNs())
                        .setGapNs(t.gapNs());
                set(t.before(), o::setBefore);
                set(t.after(), o::setAfter);
                set(t.preceding(), o::setPreceding);
                set(t.precedingKind(), o::setPrecedingKind);
                if (t.stepIndex() != null) {
                    o.setStepIndex(t.stepIndex());
                }
                s.addTop(o);
            }
            b.addGaps(s);
        }
        if (d.graph() != null) {
            HostDrillDown.GraphCoverage g = d.graph();
            GraphCoverageOut.Builder o = GraphCoverageOut.newBuilder()
                    .setKernels(g.kernels())
                    .setGraphKernels(g.graphKernels())
                    .setGraphLaunches(g.graphLaunches());
            if (g.ratio() != null) {
                o.setRatio(g.ratio());
            }
            b.setGraph(o);
        }
        for (HostDrillDown.LaunchStat l : d.launches()) {
            LaunchStatOut.Builder o = LaunchStatOut.newBuilder()
                    .setCalls(l.calls())
                    .setTotalNs(l.totalNs())
                    .setMaxNs(l.maxNs());
            set(l.name(), o::setName);
            if (l.perStep() != null) {
                o.setPerStep(l.perStep());
            }
            b.addLaunches(o);
        }
        for (HostDrillDown.Finding f : d.findings()) {
            FindingOut.Builder o = FindingOut.newBuilder().addAllEvidence(f.evidence());
            set(f.kind(), o::setKind);
            set(f.severity(), o::setSeverity);
            set(f.summary(), o::setSummary);
            b.addFindings(o);
        }
        if (d.eager() != null) {
            HostDrillDown.EagerKernels e = d.eager();
            EagerKernelsOut.Builder o = EagerKernelsOut.newBuilder()
                    .setKernels(e.kernels())
                    .setTotalNs(e.totalNs())
                    .setOtherPairs(e.otherPairs())
                    .setOtherKernels(e.otherKernels())
                    .setOtherNs(e.otherNs())
                    .setPairsCapped(e.pairsCapped());
            for (HostDrillDown.EagerKernel k : e.top()) {
                EagerKernelOut.Builder t =
                        EagerKernelOut.newBuilder().setCount(k.count()).setTotalNs(k.totalNs());
                set(k.kernel(), t::setKernel);
                set(k.source(), t::setSource);
                o.addTop(t);
            }
            b.setEager(o);
        }
        return b.build();
    }

    private static HostDrillDown drilldown(HostDrillDownOut d) {
        List<HostDrillDown.StreamGaps> gaps = new ArrayList<>(d.getGapsCount());
        for (StreamGapsOut g : d.getGapsList()) {
            List<HostDrillDown.TopGap> top = new ArrayList<>(g.getTopCount());
            for (TopGapOut t : g.getTopList()) {
                top.add(new HostDrillDown.TopGap(
                        t.getStartNs(),
                        t.getEndNs(),
                        t.getGapNs(),
                        t.hasBefore() ? t.getBefore() : null,
                        t.hasAfter() ? t.getAfter() : null,
                        t.hasPreceding() ? t.getPreceding() : null,
                        t.hasPrecedingKind() ? t.getPrecedingKind() : null,
                        t.hasStepIndex() ? t.getStepIndex() : null));
            }
            gaps.add(new HostDrillDown.StreamGaps(
                    g.hasDevice() ? g.getDevice() : null,
                    g.hasStream() ? g.getStream() : null,
                    g.getCountsList(),
                    g.getTotalNs(),
                    top));
        }
        HostDrillDown.GraphCoverage graph = null;
        if (d.hasGraph()) {
            GraphCoverageOut g = d.getGraph();
            graph = new HostDrillDown.GraphCoverage(
                    g.getKernels(), g.getGraphKernels(), g.getGraphLaunches(), g.hasRatio() ? g.getRatio() : null);
        }
        List<HostDrillDown.LaunchStat> launches = new ArrayList<>(d.getLaunchesCount());
        for (LaunchStatOut l : d.getLaunchesList()) {
            launches.add(new HostDrillDown.LaunchStat(
                    l.hasName() ? l.getName() : null,
                    l.getCalls(),
                    l.getTotalNs(),
                    l.getMaxNs(),
                    l.hasPerStep() ? l.getPerStep() : null));
        }
        List<HostDrillDown.Finding> findings = new ArrayList<>(d.getFindingsCount());
        for (FindingOut f : d.getFindingsList()) {
            findings.add(new HostDrillDown.Finding(
                    f.hasKind() ? f.getKind() : null,
                    f.hasSeverity() ? f.getSeverity() : null,
                    f.hasSummary() ? f.getSummary() : null,
                    f.getEvidenceList()));
        }
        HostDrillDown.EagerKernels eager = null;
        if (d.hasEager()) {
            EagerKernelsOut e = d.getEager();
            List<HostDrillDown.EagerKernel> top = new ArrayList<>(e.getTopCount());
            for (EagerKernelOut k : e.getTopList()) {
                top.add(new HostDrillDown.EagerKernel(
                        k.hasKernel() ? k.getKernel() : null,
                        k.hasSource() ? k.getSource() : null,
                        k.getCount(),
                        k.getTotalNs()));
            }
            eager = new HostDrillDown.EagerKernels(
                    e.getKernels(),
                    e.getTotalNs(),
                    top,
                    e.getOtherPairs(),
                    e.getOtherKernels(),
                    e.getOtherNs(),
                    e.getPairsCapped());
        }
        return new HostDrillDown(gaps, graph, launches, findings, eager);
    }
}
