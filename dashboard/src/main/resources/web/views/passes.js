// #/passes: a live pass timeline per rank; click a pass -> per-layer stacked bars by category and a layer table;
// click a layer -> its kernel table; pick a second layer -> compare; layer-type clusters; "Open in Perfetto" for the
// pass and each layer.
import { ApiError, base, chart, el, fmt, getJson, getJsonOr, hardwareNote, note, panel, qs, select, table, throttle } from '../lib.js';
import { perfettoPanel } from './perfetto.js';

/** Points of the timeline (the server buckets consecutive passes beyond this; live points shift the oldest out). */
export const MAX_POINTS = 300;
const MAX_CATEGORIES = 12;

const st = {
  rank: null,
  points: [],
  bucketed: false,
  appended: 0,
  chart: null,
  pass: null,
  layer: null,
  other: null,
  phase: null,
  token: 0,
};

/** The timeline of a rank: the server's /timeline, consecutive passes merged into at most MAX_POINTS points. */
async function timeline(ctx, rank) {
  const t = await getJson(`/api/ranks/${encodeURIComponent(rank)}/timeline${qs({ job: ctx.job, points: MAX_POINTS })}`);
  return { points: t.points, bucketed: t.bucketed };
}

/** A pass summary (REST or live) as a timeline point of one pass. */
function toPoint(p) {
  return {
    index_from: p.index,
    index_to: p.index,
    passes: 1,
    start_ns: p.start_ns ?? (p.start_us != null ? Math.round(p.start_us * 1000) : null),
    wall_us_mean: p.wall_us,
    wall_us_min: p.wall_us,
    wall_us_max: p.wall_us,
    busy_us_mean: p.busy_us,
    steady: p.steady ? 1 : 0,
    incomplete: p.complete === false ? 1 : 0,
    phase: p.phase ?? 'unknown',
  };
}

function label(p) {
  return p.index_from === p.index_to ? String(p.index_to) : `${p.index_from}\u2013${p.index_to}`;
}

function timelineOption(points) {
  const phases = [...new Set(points.map((p) => p.phase ?? 'unknown'))].sort();
  return {
    ...base,
    tooltip: { trigger: 'axis', confine: true },
    dataZoom: [{ type: 'inside' }],
    xAxis: { type: 'category', name: 'pass', data: points.map(label) },
    yAxis: { type: 'value', name: 'µs', scale: true },
    series: [
      { name: 'wall µs', type: 'line', showSymbol: false, data: points.map((p) => p.wall_us_mean), lineStyle: { width: 1 } },
      { name: 'busy µs', type: 'line', showSymbol: false, data: points.map((p) => p.busy_us_mean), lineStyle: { width: 1 } },
      ...phases.map((ph) => ({
        name: `phase ${ph}`,
        type: 'scatter',
        symbolSize: 5,
        data: points.map((p) => ((p.phase ?? 'unknown') === ph ? p.wall_us_mean : '-')),
      })),
      {
        name: 'incomplete',
        type: 'scatter',
        symbol: 'triangle',
        symbolSize: 11,
        itemStyle: { color: '#c9342b' },
        data: points.map((p) => (p.incomplete > 0 ? p.wall_us_mean : '-')),
      },
      {
        name: 'not steady',
        type: 'scatter',
        symbol: 'emptyCircle',
        symbolSize: 9,
        itemStyle: { color: '#8a93a6' },
        data: points.map((p) => (p.steady < (p.passes ?? 1) ? p.wall_us_mean : '-')),
      },
    ],
  };
}

function markTimeline(div) {
  div.dataset.points = String(st.points.length);
  div.dataset.lastIndex = String(st.points.at(-1)?.index_to ?? '');
  div.dataset.appended = String(st.appended);
}

export default {
  name: 'passes',
  title: 'Passes',
  topics: ['llmprof.layers'],

  async fetch(ctx) {
    const ranks = ctx.jobRanks();
    const wanted = new URLSearchParams(location.hash.split('?')[1] ?? '').get('rank');
    if (wanted && ranks.includes(wanted)) st.rank = wanted;
    if (!ranks.includes(st.rank)) {
      st.rank = ranks[0] ?? null;
      st.pass = st.layer = st.other = null;
    }
    if (st.rank === null) return { ranks };
    const [tl, clusters] = await Promise.all([
      timeline(ctx, st.rank),
      getJsonOr(`/api/ranks/${encodeURIComponent(st.rank)}/clusters${qs({ job: ctx.job })}`, { phases: [] }),
    ]);
    return { ranks, tl, clusters };
  },

  render(body, { ranks, tl, clusters }, ctx) {
    if (st.rank === null || tl.points.length === 0) {
      body.append(note('No passes yet for this job: the timeline fills in as passes close.', { 'data-empty': '' }));
      return 'empty';
    }
    st.points = tl.points.slice(-MAX_POINTS);
    st.bucketed = tl.bucketed;
    const rankPicker = select('rank', ranks.slice(0, 1000), st.rank, (r) => {
      st.rank = r;
      st.pass = st.layer = st.other = null;
      history.replaceState(null, '', `#/passes?rank=${encodeURIComponent(r)}`);
      ctx.rerender();
    });
    const c = chart('timeline', timelineOption(st.points), {
      height: 300,
      onAxisClick: (i) => {
        const p = st.points[i];
        if (p) selectPass(ctx, p.index_to);
      },
    });
    const detail = el('div', { 'data-panel': 'pass' });
    body.append(
      panel(
        `Pass timeline, rank ${st.rank}`,
        [el('label', {}, 'rank ', rankPicker)],
        hardwareNote(ctx.rankInfo(st.rank)),
        c.div,
        note(
          st.bucketed
            ? 'Consecutive passes are merged into at most 300 points (mean wall/busy; the phase is the majority). Click a point for its newest pass.'
            : 'One point per pass (newest 300). Click a point to see its layers.',
        ),
      ),
      detail,
    );
    c.draw();
    st.chart = c;
    markTimeline(c.div);
    body.append(clustersPanel(clusters, ctx));
    if (st.pass !== null) selectPass(ctx, st.pass, { keepLayer: true });
    return 'ready';
  },

  /** Live pass summaries: appended to the timeline of the shown rank, without a refetch (bounded: oldest out). */
  onPasses(list, ctx, dropped = 0) {
    if (!st.chart?.instance || st.rank === null) return;
    if (dropped > 0) {
      // The server left passes out of this flush: the appended points would have holes, refetch the timeline.
      refetchTimeline(ctx);
      return;
    }
    const mine = list.filter((p) => String(p.rank) === String(st.rank) && (ctx.job === null || p.job === ctx.job));
    if (mine.length === 0) return;
    for (const p of mine) st.points.push(toPoint(p));
    st.appended += mine.length;
    if (st.points.length > MAX_POINTS) st.points.splice(0, st.points.length - MAX_POINTS);
    st.chart.instance.setOption(timelineOption(st.points), { replaceMerge: ['series'] });
    markTimeline(st.chart.div);
  },

  /** Layers changed: the timeline updates itself live; nothing else to reload. */
  refresh() {},
};

/** Reloads the shown rank's timeline (at most once per second), keeping the pass and layer panels. */
const refetchTimeline = throttle(async function (ctx) {
  if (st.rank === null || !st.chart?.instance) return;
  try {
    const tl = await timeline(ctx, st.rank);
    if (!st.chart?.instance) return;
    st.points = tl.points.slice(-MAX_POINTS);
    st.bucketed = tl.bucketed;
    st.appended++;
    st.chart.instance.setOption(timelineOption(st.points), { replaceMerge: ['series'] });
    markTimeline(st.chart.div);
  } catch (e) {
    console.warn('timeline refetch failed:', e.message);
  }
}, 1000);

/** Loads a pass with its layers into the detail panel. */
async function selectPass(ctx, index, { keepLayer = false } = {}) {
  const mine = ++st.token;
  st.pass = index;
  if (!keepLayer) st.layer = st.other = null;
  const detail = document.querySelector('section[data-view="passes"] [data-panel="pass"]');
  if (!detail) return;
  detail.dataset.state = 'loading';
  try {
    const pass = await getJson(`/api/ranks/${encodeURIComponent(st.rank)}/passes/${index}${qs({ job: ctx.job })}`);
    if (mine !== st.token) return;
    detail.replaceChildren(...passPanels(ctx, pass));
    detail.dataset.state = 'ready';
    detail.dataset.pass = String(index);
    if (st.layer !== null) selectLayer(ctx, st.layer);
  } catch (e) {
    if (mine !== st.token) return;
    detail.replaceChildren(el('p', { class: 'error', 'data-error': '' }, e instanceof ApiError && e.status === 404 ? `pass ${index} is no longer held (evicted for newer passes)` : e.message));
    detail.dataset.state = 'error';
  }
}

function passPanels(ctx, pass) {
  const layers = pass.layers ?? [];
  const totals = new Map();
  for (const l of layers) for (const [cat, us] of Object.entries(l.categories ?? {})) totals.set(cat, (totals.get(cat) ?? 0) + us);
  // The biggest categories get their own series; the rest add up as "other (rest)".
  const cats = [...totals.entries()].sort((a, b) => b[1] - a[1]).map(([c]) => c);
  const top = cats.slice(0, MAX_CATEGORIES);
  const rest = cats.slice(MAX_CATEGORIES);
  const series = top.map((cat) => ({ name: cat, type: 'bar', stack: 'cat', data: layers.map((l) => l.categories?.[cat] ?? 0) }));
  if (rest.length) series.push({ name: 'other (rest)', type: 'bar', stack: 'cat', data: layers.map((l) => rest.reduce((s, c) => s + (l.categories?.[c] ?? 0), 0)) });
  const bars = chart(
    'layers',
    {
      ...base,
      tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, confine: true },
      xAxis: { type: 'category', name: 'layer', data: layers.map((l) => `${l.layer}`) },
      yAxis: { type: 'value', name: 'kernel µs' },
      series,
    },
    { height: 300, onAxisClick: (i) => selectLayer(ctx, layers[i]?.layer) },
  );
  const head = el(
    'div',
    { class: 'stats' },
    ...[
      [fmt(pass.wall_us), 'wall µs'],
      [fmt(pass.busy_us), 'busy µs'],
      [pass.kernels, 'kernels'],
      [pass.phase ?? '\u2013', 'phase'],
      [pass.steady ? 'yes' : 'no', 'steady'],
      [pass.complete ? 'yes' : 'no', 'complete'],
      [pass.batch_size ?? '\u2013', 'batch'],
    ].map(([v, l]) => el('div', { class: 'stat' }, el('b', {}, String(v)), el('span', {}, l))),
  );
  const perf = el('div', { 'data-panel': 'perfetto' });
  const openPass = el('button', { 'data-action': 'perfetto-pass', onclick: () => perfettoPanel(perf, ctx, st.rank, pass.index, null) }, 'Open in Perfetto');
  const layerTable = table(
    'layers',
    [
      { key: 'layer', label: 'layer', cls: 'num' },
      { key: 'type', label: 'type' },
      { key: 'wall_us', label: 'wall µs', cls: 'num', fmt: (v) => fmt(v) },
      { key: 'sum_us', label: 'kernel µs', cls: 'num', fmt: (v) => fmt(v) },
      { key: 'kernels', label: 'kernels', cls: 'num' },
      {
        label: 'Perfetto',
        get: (l) =>
          el(
            'button',
            {
              'data-action': 'perfetto-layer',
              'data-layer': l.layer,
              onclick: (e) => {
                e.stopPropagation();
                perfettoPanel(perf, ctx, st.rank, pass.index, l.layer);
              },
            },
            'Open in Perfetto',
          ),
      },
    ],
    layers,
    { onRow: (l) => selectLayer(ctx, l.layer), selected: (l) => l.layer === st.layer },
  );
  const layerPanel = el('div', { 'data-panel': 'layer' });
  const p1 = panel(`Pass ${pass.index}: kernel time per layer by category`, [openPass], head, bars.div, perf);
  const p2 = panel('Layers (click one for its kernels)', null, layerTable);
  const out = [p1, el('div', { class: 'grid2' }, p2, layerPanel)];
  // ECharts sizes itself from the element: draw once the caller has put it in the document.
  queueMicrotask(() => bars.draw());
  return out;
}

/** Loads a layer's kernel families, with a picker to compare with a second layer. */
async function selectLayer(ctx, layer) {
  if (layer === undefined || layer === null) return;
  st.layer = layer;
  const root = document.querySelector('section[data-view="passes"] [data-panel="layer"]');
  if (!root) return;
  for (const tr of document.querySelectorAll('section[data-view="passes"] [data-table="layers"] tbody tr')) {
    tr.classList.toggle('selected', tr.cells[0]?.textContent === String(layer));
  }
  const mine = ++st.token;
  root.dataset.state = 'loading';
  const base = `/api/ranks/${encodeURIComponent(st.rank)}/passes/${st.pass}/layers/${layer}`;
  try {
    const k = await getJson(`${base}/kernels${qs({ job: ctx.job })}`);
    if (mine !== st.token) return;
    const passLayers = [...document.querySelectorAll('section[data-view="passes"] [data-table="layers"] tbody tr')].map((tr) => tr.cells[0].textContent);
    const others = passLayers.filter((l) => l !== String(layer));
    const cmp = el('div', { 'data-panel': 'compare' });
    const picker = select('compare-layer', [['', 'compare with layer…'], ...others.map((l) => [l, `layer ${l}`])], st.other ?? '', (v) => {
      st.other = v === '' ? null : v;
      loadCompare(ctx, cmp, layer, st.other);
    });
    root.replaceChildren(
      panel(
        `Layer ${layer} (${k.type ?? '?'}): ${k.kernels} kernels, ${fmt(k.sum_us)} µs`,
        [picker],
        table(
          'kernels',
          [
            { key: 'family', label: 'kernel family', cls: 'wrap' },
            { key: 'category', label: 'category' },
            { key: 'count', label: 'count', cls: 'num' },
            { key: 'sum_us', label: 'sum µs', cls: 'num', fmt: (v) => fmt(v) },
            { key: 'max_us', label: 'max µs', cls: 'num', fmt: (v) => fmt(v) },
          ],
          k.families ?? [],
        ),
        cmp,
      ),
    );
    root.dataset.state = 'ready';
    root.dataset.layer = String(layer);
    if (st.other !== null) loadCompare(ctx, cmp, layer, st.other);
  } catch (e) {
    if (mine !== st.token) return;
    root.replaceChildren(el('p', { class: 'error', 'data-error': '' }, e.message));
    root.dataset.state = 'error';
  }
}

async function loadCompare(ctx, root, a, b) {
  if (b === null) {
    root.replaceChildren();
    delete root.dataset.state;
    return;
  }
  root.dataset.state = 'loading';
  try {
    const r = await getJson(`/api/ranks/${encodeURIComponent(st.rank)}/passes/${st.pass}/layers/${a}/compare/${b}${qs({ job: ctx.job })}`);
    const c = r.compare ?? r;
    const rows = [
      ...(c.common ?? []).map((f) => ({ ...f, side: 'both' })),
      ...(c.only_a ?? []).map((f) => ({ family: f.family, category: f.category, count_a: f.count, sum_a_us: f.sum_us, side: `only ${a}` })),
      ...(c.only_b ?? []).map((f) => ({ family: f.family, category: f.category, count_b: f.count, sum_b_us: f.sum_us, side: `only ${b}` })),
    ];
    root.replaceChildren(
      el('h4', {}, `Layer ${c.layer_a ?? a} vs layer ${c.layer_b ?? b}: ${fmt(c.sum_a_us)} µs vs ${fmt(c.sum_b_us)} µs (${c.delta_us >= 0 ? '+' : ''}${fmt(c.delta_us)} µs, ${fmt(c.delta_pct)} %)`),
      table(
        'compare',
        [
          { key: 'family', label: 'kernel family', cls: 'wrap' },
          { key: 'side', label: 'in' },
          { key: 'count_a', label: `count ${a}`, cls: 'num' },
          { key: 'count_b', label: `count ${b}`, cls: 'num' },
          { key: 'sum_a_us', label: `µs ${a}`, cls: 'num', fmt: (v) => fmt(v) },
          { key: 'sum_b_us', label: `µs ${b}`, cls: 'num', fmt: (v) => fmt(v) },
          { key: 'delta_us', label: 'Δ µs', cls: 'num', fmt: (v) => fmt(v) },
        ],
        rows,
      ),
    );
    root.dataset.state = 'ready';
  } catch (e) {
    root.replaceChildren(el('p', { class: 'error', 'data-error': '' }, e.message));
    root.dataset.state = 'error';
  }
}

function clustersPanel(clusters, ctx) {
  const phases = clusters.phases ?? [];
  if (phases.length === 0) return panel('Layer-type clusters', null, note('No steady passes yet to cluster.'));
  if (!phases.some((p) => p.phase === st.phase)) st.phase = phases[0].phase;
  const ph = phases.find((p) => p.phase === st.phase);
  const cl = ph.clusters ?? [];
  const cats = [...new Set(cl.flatMap((c) => Object.keys(c.shares_pct ?? {})))].sort();
  const c = chart(
    'clusters',
    {
      ...base,
      tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, confine: true },
      xAxis: { type: 'category', data: cl.map((x) => `${x.cluster} (${x.count})`) },
      yAxis: { type: 'value', name: '% of kernel time', max: 100 },
      series: cats.map((cat) => ({ name: cat, type: 'bar', stack: 'share', data: cl.map((x) => x.shares_pct?.[cat] ?? 0) })),
    },
    { height: 260 },
  );
  const picker = select('cluster-phase', phases.map((p) => [p.phase, `${p.phase} (${p.passes} passes)`]), st.phase, (v) => {
    st.phase = v;
    ctx.rerender();
  });
  const p = panel(
    `Layer-type clusters over the last ${clusters.window ?? '?'} steady passes`,
    [picker],
    c.div,
    table(
      'clusters',
      [
        { key: 'cluster', label: 'cluster' },
        { key: 'count', label: 'layers', cls: 'num' },
        { key: 'avg_wall_us', label: 'avg wall µs', cls: 'num', fmt: (v) => fmt(v) },
        { key: 'avg_sum_us', label: 'avg kernel µs', cls: 'num', fmt: (v) => fmt(v) },
        { key: 'gemm_pct', label: 'gemm %', cls: 'num', fmt: (v) => fmt(v) },
        { key: 'comm_pct', label: 'comm %', cls: 'num', fmt: (v) => fmt(v) },
        { key: 'moe_pct', label: 'moe %', cls: 'num', fmt: (v) => fmt(v) },
      ],
      cl,
    ),
  );
  queueMicrotask(() => c.draw());
  return p;
}
