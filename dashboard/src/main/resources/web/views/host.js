// #/host: host overhead of a rank (verdict per phase, M1..M5 over time, gap buckets, graph coverage, launches,
// findings) and of its job (stragglers, baseline comparison).
import { ApiError, authFetch, base, chart, el, fmt, getJson, getJsonOr, hardwareNote, note, panel, pct, qs, select, table } from '../lib.js';

/** The metrics HostMetrics reports, with the threshold names (m1..m5) of ANALYSIS.md section 3. */
export const METRICS = [
  ['gpu_idle_ratio', 'M1 GPU idle', 'm1'],
  ['launch_overhead_ratio', 'M2 launch overhead', 'm2'],
  ['host_prep_exposed_ratio', 'M3a host prep exposed', 'm3a'],
  ['host_prep_perf_impact', 'M3b host prep impact', 'm3b'],
  ['host_prep_idle_attribution', 'M3c idle from host prep', 'm3c'],
  ['gpu_utilization', 'M4 GPU utilization', 'm4'],
  ['nccl_ratio', 'M5 communication share', 'm5'],
  ['graph_coverage', 'graph coverage', null],
];
const POINTS = 300;
const st = { rank: null };

/** M1..M5 over time: the server's history, consecutive steps merged into at most POINTS points. */
async function history(ctx, rank) {
  const h = await getJson(`/api/ranks/${encodeURIComponent(rank)}/host/history${qs({ job: ctx.job, points: POINTS })}`);
  return h.points;
}

export default {
  name: 'host',
  title: 'Host overhead',
  topics: ['llmprof.host-verdicts', 'llmprof.host-baselines'],

  async fetch(ctx) {
    const ranks = ctx.jobRanks();
    if (!ranks.includes(st.rank)) st.rank = ranks[0] ?? null;
    if (st.rank === null) return { ranks };
    let host;
    try {
      host = await getJson(`/api/ranks/${encodeURIComponent(st.rank)}/host${qs({ job: ctx.job, steps: 1 })}`);
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) return { ranks, host: null };
      throw e;
    }
    const job = ctx.job;
    const [hist, stragglers, baseline] = await Promise.all([
      history(ctx, st.rank),
      getJsonOr(`/api/jobs/${encodeURIComponent(job)}/stragglers`, null),
      getJsonOr(`/api/jobs/${encodeURIComponent(job)}/baseline`, null),
    ]);
    // Compare only when it can answer: a baseline is marked and another run exists (no 4xx in normal use).
    let compare = null;
    if (baseline?.baseline && (baseline.runs ?? []).some((r) => r !== baseline.baseline)) {
      compare = await getJsonOr(`/api/jobs/${encodeURIComponent(job)}/compare`, null, [404, 409]);
    }
    return { ranks, host, hist, stragglers, baseline, compare };
  },

  render(body, { ranks, host, hist, stragglers, baseline, compare }, ctx) {
    if (!host) {
      body.append(note(`No host-overhead steps for rank ${st.rank ?? '(none)'} of job ${ctx.job ?? '(none)'} yet.`, { 'data-empty': '' }));
      return 'empty';
    }
    const picker = select('host-rank', ranks, st.rank, (r) => {
      st.rank = r;
      ctx.rerender();
    });
    // Verdict per phase.
    const phases = Object.values(host.phases ?? {});
    const verdicts = table(
      'verdicts',
      [
        { key: 'phase', label: 'phase' },
        { key: 'llmprof_verdict', label: 'verdict', fmt: (v) => el('span', { class: 'pill ' + v, 'data-verdict': v }, v) },
        { key: 'seed_verdict', label: 'seed verdict' },
        { get: (p) => `${p.crossed_count}/${p.applicable_count}`, label: 'crossed' },
        { get: (p) => (p.crossed ?? []).join(' ') || '\u2013', label: 'metrics crossed' },
        ...METRICS.slice(0, 7).map(([k, , m]) => ({ get: (p) => p.metrics?.[k], label: m.toUpperCase(), cls: 'num', fmt: (v) => pct(v) })),
        { get: (p) => p.metrics?.graph_coverage, label: 'graph cov.', cls: 'num', fmt: (v) => pct(v) },
        { get: (p) => `${p.first_index}\u2013${p.last_index}`, label: 'steps' },
      ],
      phases,
    );
    // The headline by the seed's rule: host-bound when all steps OR the context steps OR the generation steps are.
    const head = host.headline ?? {};
    const which = (ps) => (ps?.length ? ps.join(', ') : 'no phase');
    const summary = el(
      'div',
      { class: 'stats' },
      el('div', { class: 'stat' }, el('b', {}, el('span', { class: 'pill ' + (head.llmprof_verdict ?? ''), 'data-verdict-main': head.llmprof_verdict ?? '' }, head.llmprof_verdict ?? '?')), el('span', {}, `host-bound? (llmprof; YES in: ${which(head.llmprof_verdict_phases)})`)),
      el('div', { class: 'stat' }, el('b', {}, el('span', { class: 'pill ' + (head.verdict ?? ''), 'data-verdict-seed': head.verdict ?? '' }, head.verdict ?? '?')), el('span', {}, `seed rule: all OR context OR generation (YES in: ${which(head.verdict_phases)})`)),
      el('div', { class: 'stat' }, el('b', {}, fmt(host.steps_seen, 0)), el('span', {}, 'steps seen')),
      el('div', { class: 'stat' }, el('b', {}, pct(host.drilldown?.graph?.ratio)), el('span', {}, 'graph coverage')),
      el('div', { class: 'stat' }, el('b', {}, host.run ?? '\u2013'), el('span', {}, 'run')),
    );
    // M1..M5 over time.
    const hc = chart(
      'host-metrics',
      {
        ...base,
        dataZoom: [{ type: 'inside' }],
        xAxis: { type: 'category', name: 'step', data: hist.map((p) => (p.index_from === p.index_to ? String(p.index_from) : `${p.index_from}\u2013${p.index_to}`)) },
        yAxis: { type: 'value', name: 'ratio', min: 0 },
        series: METRICS.filter(([k]) => hist.some((p) => p[k] != null)).map(([k, name]) => ({
          name,
          type: 'line',
          showSymbol: false,
          connectNulls: false,
          data: hist.map((p) => p[k] ?? '-'),
        })),
      },
      { height: 300 },
    );
    // Gap buckets per stream.
    const gaps = host.drilldown?.gaps ?? [];
    const bucketNames = gaps.length ? Object.keys(gaps[0].buckets ?? {}) : [];
    const gc = chart(
      'gaps',
      {
        ...base,
        tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, confine: true },
        xAxis: { type: 'category', name: 'gap', data: bucketNames },
        yAxis: { type: 'value', name: 'gaps' },
        series: gaps.slice(0, 8).map((g) => ({ name: `device ${g.device} stream ${g.stream}`, type: 'bar', data: bucketNames.map((b) => g.buckets[b] ?? 0) })),
      },
      { height: 260 },
    );
    const launches = table(
      'launches',
      [
        { key: 'name', label: 'API' },
        { key: 'calls', label: 'calls', cls: 'num' },
        { key: 'per_step', label: 'per step', cls: 'num', fmt: (v) => fmt(v, 2) },
        { key: 'total_ns', label: 'total ms', cls: 'num', fmt: (v) => fmt(v / 1e6, 3) },
        { key: 'max_ns', label: 'max µs', cls: 'num', fmt: (v) => fmt(v / 1e3, 1) },
      ],
      host.drilldown?.launches ?? [],
    );
    // Kernels launched outside a CUDA graph, by the op or annotation that launched them (the top pairs by GPU time).
    const eager = host.drilldown?.eager_kernels;
    const eagerTable = table(
      'eager',
      [
        { key: 'kernel', label: 'kernel' },
        { key: 'source', label: 'launched from' },
        { key: 'count', label: 'kernels', cls: 'num' },
        { key: 'total_ns', label: 'GPU ms', cls: 'num', fmt: (v) => fmt(v / 1e6, 3) },
      ],
      eager?.top ?? [],
    );
    const eagerNote = eager
      ? note(`${fmt(eager.kernels, 0)} eager kernel(s), ${fmt(eager.total_ns / 1e6, 3)} ms of GPU time` + (eager.other_pairs ? `; ${fmt(eager.other_pairs, 0)} more (kernel, source) pair(s) with ${fmt(eager.other_kernels, 0)} kernel(s) not listed` : ''))
      : note('No eager kernels seen yet.');
    const findings = (host.drilldown?.findings ?? []).map((f) =>
      el('div', { 'data-finding': f.kind }, el('span', { class: 'pill ' + f.severity }, `${f.severity} ${f.kind}`), ' ', f.summary, el('ul', {}, (f.evidence ?? []).map((x) => el('li', {}, x)))),
    );
    body.append(
      panel(`Rank ${st.rank}, job ${ctx.job}`, [el('label', {}, 'rank ', picker)], hardwareNote(ctx.rankInfo(st.rank)), summary, verdicts),
      panel(`M1..M5 over time (${hist.length} points)`, null, hc.div),
      el('div', { class: 'grid2' }, panel('GPU idle gaps by length', null, gc.div), panel('Launch and sync APIs', null, launches)),
      panel('Eager kernels (not from a CUDA graph) and their launch source', null, eagerNote, eagerTable),
      panel('Findings', null, findings.length ? findings : note('No findings.')),
      el('div', { class: 'grid2' }, stragglersPanel(stragglers), baselinePanel(ctx, baseline, compare)),
    );
    hc.draw();
    gc.draw();
    return 'ready';
  },
};

function stragglersPanel(s) {
  if (!s) return panel('Stragglers', null, note('No straggler report yet.'));
  return panel(
    `Stragglers, run ${s.run} (${s.stragglers?.length ? s.stragglers.join(' ') : 'none'})`,
    null,
    el('p', { class: 'note' }, `${fmt(s.instances, 0)} collectives matched over ${fmt(s.steps_matched, 0)} steps, walls over ${fmt(s.wall_steps_matched, 0)} steps; a rank is a straggler when it is last in, or causes, more than ${pct(s.straggler_share, 0)} of the collective wait, or has the slowest step wall in more than that share of the steps. Skew p50 ${fmt(s.skew?.p50_ns / 1e3, 1)} µs, p99 ${fmt(s.skew?.p99_ns / 1e3, 1)} µs.`),
    table(
      'stragglers',
      [
        { key: 'rank', label: 'rank' },
        { key: 'steps', label: 'steps', cls: 'num' },
        { key: 'times_last', label: 'times last', cls: 'num' },
        { key: 'share_last', label: 'share last', cls: 'num', fmt: (v) => pct(v) },
        { key: 'mean_delay_ns', label: 'mean delay µs', cls: 'num', fmt: (v) => fmt(v / 1e3, 2) },
        { key: 'caused_wait_share', label: 'wait caused', cls: 'num', fmt: (v) => pct(v) },
        { key: 'share_slowest', label: 'slowest wall', cls: 'num', fmt: (v) => pct(v) },
        { key: 'mean_excess_ns', label: 'wall excess µs', cls: 'num', fmt: (v) => fmt(v / 1e3, 1) },
        { key: 'straggler', label: 'straggler', fmt: (v, r) => (v ? el('span', { class: 'pill bad' }, 'yes' + (r.by_collectives && r.by_walls ? ' (wait, walls)' : r.by_walls ? ' (walls)' : ' (wait)')) : 'no') },
      ],
      s.ranks ?? [],
    ),
  );
}

function baselinePanel(ctx, b, compare) {
  if (!b) return panel('Baseline comparison', null, note('No runs of this job yet.'));
  const runs = b.runs ?? [];
  const mark = el('button', {
    'data-action': 'mark-baseline',
    onclick: async () => {
      const run = runPick.value;
      await authFetch(`/api/jobs/${encodeURIComponent(ctx.job)}/baseline`, { method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ run }) });
      ctx.rerender();
    },
  }, 'Mark as baseline');
  const runPick = select('baseline-run', runs, b.baseline ?? runs[0], () => {});
  const content = [];
  if (!b.baseline) content.push(note('No baseline marked: mark a run, then a later run of the job is compared against it.'));
  else if (!compare) content.push(note(`Baseline ${b.baseline}; no other run to compare yet.`));
  else {
    content.push(
      el('p', { 'data-compare': compare.conclusion ?? '' }, `${compare.target_run} vs baseline ${compare.baseline_run}: ${compare.conclusion ?? ''} (step growth ${fmt((compare.step_growth_ns ?? 0) / 1e3, 1)} µs, gap growth ${fmt((compare.gap_growth_ns ?? 0) / 1e3, 1)} µs)`),
      el('ul', {}, (compare.evidence ?? []).slice(0, 10).map((x) => el('li', {}, x))),
      table(
        'compare-runs',
        [
          { key: 'section', label: 'section' },
          { key: 'name', label: 'metric' },
          { key: 'unit', label: 'unit' },
          { key: 'baseline', label: 'baseline', cls: 'num', fmt: (v) => fmt(v, 3) },
          { key: 'target', label: 'target', cls: 'num', fmt: (v) => fmt(v, 3) },
          { key: 'delta_pct', label: 'Δ %', cls: 'num', fmt: (v) => fmt(v, 1) },
          { key: 'status', label: 'status' },
        ],
        compare.rows ?? [],
      ),
    );
  }
  return panel(`Baseline comparison (baseline: ${b.baseline ?? 'none'})`, [runPick, mark], ...content);
}
