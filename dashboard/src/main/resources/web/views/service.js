// #/service: TTFT / TPOT / e2e / queue percentiles, request states, KV usage, batch sizes, bubbles, slowest requests.
import { base, chart, el, fmt, getJson, getJsonOr, note, panel, pct, qs, select, table } from '../lib.js';

const LATENCIES = [
  ['ttft_ms', 'TTFT'],
  ['tpot_ms', 'TPOT'],
  ['e2e_ms', 'e2e'],
  ['queue_ms', 'queue'],
];
const st = { by: 'e2e' };

/** Histogram buckets in any of the shapes a server may send: [{label|le|bucket, count}] or {label: count}. */
function buckets(h) {
  if (!h) return [];
  if (Array.isArray(h.bounds) && Array.isArray(h.counts)) {
    // Prometheus-style: counts[i] in (bounds[i-1], bounds[i]], the last count above the last bound. Only the
    // range from the first to the last non-empty bucket is drawn.
    const all = h.counts.map((c, i) => [i < h.bounds.length ? `\u2264 ${h.bounds[i]}` : `> ${h.bounds.at(-1)}`, c]);
    const first = all.findIndex(([, c]) => c > 0);
    if (first === -1) return [];
    const last = all.length - 1 - [...all].reverse().findIndex(([, c]) => c > 0);
    return all.slice(first, last + 1);
  }
  const list = Array.isArray(h) ? h : h.buckets ?? h;
  if (Array.isArray(list)) {
    return list.map((b) => [String(b.label ?? b.bucket ?? b.range ?? (b.le !== undefined ? `\u2264 ${b.le}` : `${b.from ?? ''}\u2013${b.to ?? ''}`)), b.count ?? b.n ?? 0]);
  }
  return Object.entries(list).filter(([, v]) => typeof v === 'number');
}

/** A histogram of values (client-side, for servers without the summary's buckets). */
function histogram(values, edges) {
  const counts = new Array(edges.length + 1).fill(0);
  for (const v of values) {
    let i = edges.findIndex((e) => v <= e);
    counts[i === -1 ? edges.length : i]++;
  }
  return counts.map((c, i) => [i < edges.length ? `\u2264 ${edges[i]}` : `> ${edges.at(-1)}`, c]);
}

export default {
  name: 'service',
  title: 'Service',
  topics: ['llmprof.service-requests', 'llmprof.service-batches', 'llmprof.service-forwards', 'llmprof.service-kvcache', 'llmprof.service-request-states'],

  async fetch(ctx) {
    const q = qs({ job: ctx.job });
    // 404 unknown_instance: this job has no service records (a training job): the view is empty, and no
    // further request is made (each 404 is a console error in the browser).
    const sum = await getJsonOr(`/api/service/summary${q}`, null);
    if (!sum) return { sum: {}, states: [], kv: [], slowest: {}, batches: [], forwards: [] };
    const [states, kv, slowest, batches, forwards] = await Promise.all([
      getJson(`/api/request-states${q}`),
      getJson(`/api/kvcache${q}`),
      getJson(`/api/requests${qs({ job: ctx.job, slowest: 20, by: st.by })}`),
      getJson(`/api/batches${q}`),
      getJson(`/api/forwards${q}`),
    ]);
    return { sum, states: states.instances ?? [], kv: kv.instances ?? [], slowest, batches: batches.batches ?? [], forwards: forwards.forwards ?? [] };
  },

  render(body, { sum, states, kv, slowest, batches, forwards }, ctx) {
    if (!sum.requests && states.length === 0 && kv.length === 0 && batches.length === 0) {
      body.append(note(`No service records for job ${ctx.job ?? '(none)'} yet (ship service events with the agent or POST them to its ingest).`, { 'data-empty': '' }));
      return 'empty';
    }
    // Percentiles.
    const lat = LATENCIES.filter(([k]) => sum[k] && sum[k].count !== 0);
    const pc = chart(
      'latency',
      {
        ...base,
        tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, confine: true },
        xAxis: { type: 'category', data: lat.map(([, n]) => n) },
        yAxis: { type: 'value', name: 'ms' },
        series: ['p50', 'p90', 'p99'].map((p) => ({ name: p, type: 'bar', data: lat.map(([k]) => sum[k]?.[p] ?? null) })),
      },
      { height: 260 },
    );
    const latTable = table(
      'latency',
      [
        { key: 'name', label: '' },
        ...['p50', 'p90', 'p99', 'mean', 'max'].map((p) => ({ key: p, label: `${p} ms`, cls: 'num', fmt: (v) => fmt(v, 3) })),
      ],
      lat.map(([k, name]) => ({ name, ...sum[k] })),
    );
    const finished = Object.entries(sum.finished ?? {}).map(([reason, n]) => `${reason} ${n}`).join(', ') || '\u2013';
    const head = el(
      'div',
      { class: 'stats' },
      el('div', { class: 'stat' }, el('b', {}, fmt(sum.requests, 0)), el('span', {}, 'requests held')),
      el('div', { class: 'stat' }, el('b', {}, finished), el('span', {}, 'finished by reason')),
      el('div', { class: 'stat' }, el('b', {}, pct(sum.kv?.usage ?? kv[0]?.usage)), el('span', {}, 'KV usage (latest)')),
    );
    // Request states over time (first instance with data; each series is bounded by the server).
    const inst = states[0];
    const series = inst?.series ?? [];
    const stateNames = [...new Set(series.flatMap((s) => Object.keys(s.states ?? {})))];
    const rc = chart(
      'request-states',
      {
        ...base,
        xAxis: { type: 'category', name: 'ms', data: series.map((s) => fmt((s.time_ns - (series[0]?.time_ns ?? 0)) / 1e6, 1)) },
        yAxis: { type: 'value', name: 'requests' },
        series: (stateNames.length ? stateNames : ['waiting', 'running']).map((n) => ({
          name: n,
          type: 'line',
          showSymbol: false,
          step: 'end',
          data: series.map((s) => s.states?.[n] ?? s[n] ?? null),
        })),
      },
      { height: 240 },
    );
    // KV usage per dp rank over time.
    const kvSeries = kv[0]?.series ?? [];
    const dps = [...new Set(kvSeries.map((k) => k.dp_rank))].sort();
    const t0 = kvSeries[0]?.time_ns ?? 0;
    const kc = chart(
      'kv',
      {
        ...base,
        xAxis: { type: 'value', name: 'ms', scale: true },
        yAxis: { type: 'value', name: 'usage %', min: 0, max: 100 },
        series: dps.map((d) => ({
          name: `dp ${d}`,
          type: 'line',
          showSymbol: false,
          data: kvSeries.filter((k) => k.dp_rank === d).map((k) => [(k.time_ns - t0) / 1e6, (k.usage ?? 0) * 100]),
        })),
      },
      { height: 240 },
    );
    // Batch sizes and bubbles: the server's histograms, or the newest records' (client-side, bounded by the API).
    const bs = sum.batch_size ? buckets(sum.batch_size) : histogram(batches.filter((b) => b.kind === 'execute' || b.kind == null).map((b) => b.batch_size ?? 0), [1, 2, 4, 8, 16, 32, 64, 128, 256]);
    const bb = sum.bubbles_ms ? buckets(sum.bubbles_ms) : histogram(forwards.map((f) => f.bubble_ms).filter((v) => v != null), [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 50]);
    const bar = (name, data, axis) =>
      chart(
        name,
        {
          ...base,
          legend: { show: false },
          tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, confine: true },
          xAxis: { type: 'category', name: axis, data: data.map(([l]) => l) },
          yAxis: { type: 'value', name: 'count' },
          series: [{ type: 'bar', name: 'count', data: data.map(([, c]) => c) }],
        },
        { height: 220 },
      );
    const bc = bar('batch-sizes', bs, 'batch size');
    const uc = bar('bubbles', bb, 'bubble ms');
    const by = select('slowest-by', ['e2e', 'ttft', 'tpot', 'queue'], st.by, (v) => {
      st.by = v;
      ctx.rerender();
    });
    body.append(
      panel('Latency percentiles', null, head, el('div', { class: 'grid2' }, pc.div, latTable)),
      el('div', { class: 'grid2' }, panel(`Request states${inst ? ` (${inst.instance})` : ''}`, null, rc.div), panel('KV-cache usage', null, kc.div)),
      el('div', { class: 'grid2' }, panel(sum.batch_size ? 'Batch sizes' : 'Batch sizes (newest batches)', null, bc.div), panel(sum.bubbles_ms ? 'Bubbles between forwards' : 'Bubbles between forwards (newest)', null, uc.div)),
      panel(
        `Slowest requests by ${st.by}`,
        [by],
        table(
          'slowest',
          [
            { key: 'rid', label: 'request' },
            { key: 'instance', label: 'instance' },
            { key: 'dp_rank', label: 'dp' },
            { key: 'status', label: 'status' },
            { key: 'ttft_ms', label: 'TTFT ms', cls: 'num', fmt: (v) => fmt(v, 3) },
            { key: 'tpot_ms', label: 'TPOT ms', cls: 'num', fmt: (v) => fmt(v, 3) },
            { key: 'e2e_ms', label: 'e2e ms', cls: 'num', fmt: (v) => fmt(v, 3) },
            { key: 'queue_wait_ms', label: 'queue ms', cls: 'num', fmt: (v) => fmt(v, 3) },
            { key: 'input_tokens', label: 'in tok', cls: 'num' },
            { key: 'output_tokens', label: 'out tok', cls: 'num' },
            { key: 'finish_reason', label: 'finish' },
          ],
          slowest.requests ?? [],
        ),
      ),
    );
    for (const c of [pc, rc, kc, bc, uc]) c.draw();
    return 'ready';
  },
};
