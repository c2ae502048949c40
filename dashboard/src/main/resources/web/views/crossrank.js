// #/cross-rank: skew between the ranks of a job, per aligned pass (newest 300), and the slowest rank of each.
import { base, chart, el, fmt, getJson, note, panel, qs, table } from '../lib.js';

const LIMIT = 300;

export default {
  name: 'cross-rank',
  title: 'Cross-rank',
  topics: ['llmprof.cross-rank'],

  async fetch(ctx) {
    const jobs = (await getJson('/api/jobs')).jobs ?? [];
    const job = jobs.find((j) => j.job === ctx.job);
    if (!job) return { job: null };
    const passes = await getJson(`/api/jobs/${encodeURIComponent(job.job)}/passes${qs({ limit: LIMIT })}`);
    return { job, passes: (passes.passes ?? []).slice().reverse() };
  },

  render(body, { job, passes }, ctx) {
    if (!job || passes.length === 0) {
      body.append(note(`No cross-rank passes for job ${ctx.job ?? '(none)'} yet: they appear once its ranks report the same pass.`, { 'data-empty': '' }));
      return 'empty';
    }
    const c = chart(
      'skew',
      {
        ...base,
        dataZoom: [{ type: 'inside' }],
        xAxis: { type: 'category', name: 'pass', data: passes.map((p) => String(p.index)) },
        yAxis: [
          { type: 'value', name: 'skew µs' },
          { type: 'value', name: 'wall µs', scale: true },
        ],
        series: [
          { name: 'skew µs', type: 'bar', data: passes.map((p) => p.skew_us), itemStyle: { color: '#c88a04' } },
          { name: 'min wall µs', type: 'line', yAxisIndex: 1, showSymbol: false, data: passes.map((p) => p.min_wall_us) },
          { name: 'median wall µs', type: 'line', yAxisIndex: 1, showSymbol: false, data: passes.map((p) => p.median_wall_us) },
          { name: 'max wall µs', type: 'line', yAxisIndex: 1, showSymbol: false, data: passes.map((p) => p.max_wall_us) },
        ],
      },
      { height: 300 },
    );
    // How often each rank was the slowest over the passes shown: the straggler at a glance.
    const slowest = new Map();
    for (const p of passes) if (p.slowest_rank != null) slowest.set(p.slowest_rank, (slowest.get(p.slowest_rank) ?? 0) + 1);
    const ranks = (job.ranks ?? []).slice(0, 64);
    const s = chart(
      'slowest-rank',
      {
        ...base,
        legend: { show: false },
        xAxis: { type: 'category', name: 'rank', data: ranks },
        yAxis: { type: 'value', name: 'passes slowest' },
        series: [{ type: 'bar', name: 'passes slowest', data: ranks.map((r) => slowest.get(r) ?? 0) }],
      },
      { height: 220 },
    );
    const newest = passes.slice().reverse();
    body.append(
      panel(`Skew per aligned pass, job ${job.job} (${job.ranks?.length ?? '?'} ranks, newest ${passes.length})`, null, c.div),
      el(
        'div',
        { class: 'grid2' },
        panel('Slowest rank count', null, s.div),
        panel(
          'Aligned passes (newest first)',
          null,
          table(
            'cross-rank',
            [
              { key: 'index', label: 'pass', cls: 'num' },
              { key: 'run', label: 'run' },
              { key: 'ranks_reported', label: 'ranks', cls: 'num' },
              { get: (p) => (p.missing_ranks ?? []).join(' ') || '\u2013', label: 'missing' },
              { key: 'skew_us', label: 'skew µs', cls: 'num', fmt: (v) => fmt(v) },
              { key: 'skew_pct', label: 'skew %', cls: 'num', fmt: (v) => fmt(v, 2) },
              { key: 'slowest_rank', label: 'slowest' },
              { key: 'start_skew_us', label: 'start skew µs', cls: 'num', fmt: (v) => fmt(v) },
            ],
            newest,
            { onRow: (p) => (location.hash = `#/passes?rank=${encodeURIComponent(p.slowest_rank)}`) },
          ),
        ),
      ),
    );
    c.draw();
    s.draw();
    return 'ready';
  },
};
