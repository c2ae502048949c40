// #/overview: jobs and ranks with their state, ingest counts.
import { base, chart, el, fmt, getJson, note, panel, table } from '../lib.js';

/** A rank whose newest pass arrived (live) within this long counts as live. */
const LIVE_MS = 15000;
/** Bars in the passes-per-rank chart (the table and chart stay bounded with 8+ ranks). */
const MAX_BARS = 64;

/** Per rank key: [passes_seen, Date.now() when it last changed] as this page saw it. */
const seen = new Map();

export default {
  name: 'overview',
  title: 'Overview',
  topics: ['llmprof.passes', 'llmprof.cross-rank', 'llmprof.anomalies', 'llmprof.service-requests'],

  async fetch(ctx) {
    const [ranks, jobs, health] = await Promise.all([getJson('/api/ranks'), getJson('/api/jobs'), getJson('/health').catch((e) => ({ status: 'DOWN', error: e.message }))]);
    return { ranks: ranks.ranks ?? [], jobs: jobs.jobs ?? [], health };
  },

  render(body, { ranks, jobs, health }, ctx) {
    ctx.ranks = ranks;
    const now = Date.now();
    for (const r of ranks) {
      const prev = seen.get(r.key);
      if (!prev || prev[0] !== r.passes_seen) seen.set(r.key, [r.passes_seen, now]);
    }
    const state = (r) => {
      if (r.state) return r.state; // the server's own rank state where it reports one
      const live = ctx.lastLivePass.get(r.key);
      const changed = seen.get(r.key)?.[1] ?? 0;
      const last = Math.max(live ?? 0, changed);
      return now - last < LIVE_MS && (live || seen.size) ? 'live' : 'idle';
    };
    const feed = health.feed ?? {};
    body.append(
      el(
        'div',
        { class: 'stats', 'data-stats': 'ingest' },
        stat(health.status ?? '?', 'dashboard health'),
        stat(fmt(feed.records ?? null, 0), 'records applied'),
        stat(fmt(feed.bad_records ?? null, 0), 'bad records'),
        stat(ctx.jobs.length, 'jobs'),
        stat(ranks.length, 'ranks'),
        stat(fmt(ranks.reduce((s, r) => s + (r.passes_seen ?? 0), 0), 0), 'passes seen'),
        stat(ctx.liveEvents, 'live events'),
      ),
    );
    if (feed.catching_up) {
      body.append(
        note(`Catching up with the topics: about ${fmt(feed.offsets_behind ?? null, 0)} retained records still to read; the figures below are incomplete until then.`, {
          'data-catching-up': '',
        }),
      );
    }
    if (ranks.length === 0) {
      body.append(note('No data yet: no rank has sent a pass. Start an agent (llmprof agent / replay) and this page fills in live.', { 'data-empty': '' }));
      return 'empty';
    }
    const jobRows = jobs.map((j) => ({ ...j, latest_skew: j.latest?.skew_us, latest_index: j.latest?.index, slowest: j.latest?.slowest_rank }));
    body.append(
      panel(
        'Jobs',
        null,
        jobRows.length
          ? table('jobs', [
              { key: 'job', label: 'job' },
              { get: (j) => (j.ranks ?? []).length, label: 'ranks', cls: 'num' },
              { key: 'passes_held', label: 'aligned passes held', cls: 'num' },
              { key: 'latest_index', label: 'latest pass', cls: 'num' },
              { key: 'latest_skew', label: 'latest skew µs', cls: 'num', fmt: (v) => fmt(v, 1) },
              { key: 'slowest', label: 'slowest rank' },
            ], jobRows)
          : note('No cross-rank passes yet (they appear once ranks of a job report the same pass).'),
      ),
    );
    const rows = ranks.map((r) => ({ ...r, state: state(r) }));
    body.append(
      panel(
        'Ranks',
        null,
        table(
          'ranks',
          [
            { key: 'job', label: 'job' },
            { key: 'rank', label: 'rank' },
            { key: 'state', label: 'state', fmt: (v) => el('span', { class: 'pill ' + (v === 'live' ? 'good' : 'warn'), 'data-rank-state': v }, v) },
            { key: 'passes_seen', label: 'passes seen', cls: 'num' },
            { key: 'passes_held', label: 'held', cls: 'num' },
            { key: 'last_pass_index', label: 'last pass', cls: 'num' },
            { key: 'last_wall_us', label: 'last wall µs', cls: 'num', fmt: (v) => fmt(v, 1) },
            { key: 'last_run', label: 'run' },
            { key: 'last_seen_ms', label: 'last seen', fmt: (v) => (v ? new Date(v).toISOString().replace('T', ' ').slice(0, 19) : '\u2013') },
            { get: (r) => r.incomplete_held ?? null, label: 'incomplete held', cls: 'num' },
            { get: (r) => r.anomalies ?? null, label: 'anomalies', cls: 'num' },
          ],
          rows,
          { onRow: (r) => (location.hash = `#/passes?rank=${encodeURIComponent(r.rank)}`) },
        ),
      ),
    );
    const shown = rows.slice(0, MAX_BARS);
    const c = chart(
      'passes-per-rank',
      {
        ...base,
        legend: { show: false },
        xAxis: { type: 'category', data: shown.map((r) => `${r.job}/${r.rank}`), axisLabel: { rotate: shown.length > 12 ? 45 : 0 } },
        yAxis: { type: 'value', name: 'passes seen' },
        series: [{ type: 'bar', name: 'passes seen', data: shown.map((r) => r.passes_seen) }],
      },
      { height: 240 },
    );
    body.append(panel(`Passes per rank${rows.length > MAX_BARS ? ` (first ${MAX_BARS} of ${rows.length})` : ''}`, null, c.div));
    c.draw();
    return 'ready';
  },
};

function stat(value, label) {
  return el('div', { class: 'stat' }, el('b', {}, String(value)), el('span', {}, label));
}
