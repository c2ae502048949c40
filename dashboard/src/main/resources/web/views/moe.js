// #/moe: expert-parallel balance heatmap (MoE layer x EP rank, time relative to the layer mean) and MoE per-rank
// distributions (p2.5 / p50 / mean / p97.5 of each op's time per rank). Layer and rank labels come from service
// events: the tooltip formatter's answer is HTML, so it is escaped (esc); ECharts escapes its default tooltips.
import { base, chart, el, esc, fmt, getJson, getJsonOr, note, panel, qs, select, table } from '../lib.js';

const MAX_RANKS = 64;
const MAX_LAYERS = 128;
const st = { instance: 0 };

export default {
  name: 'moe',
  title: 'EP / MoE',
  topics: ['llmprof.service-ep-balance', 'llmprof.service-moe'],

  async fetch(ctx) {
    const q = qs({ job: ctx.job });
    // 404 unknown_instance: no service records for this job (the view is empty).
    const ep = await getJsonOr(`/api/ep-balance${q}`, null);
    if (!ep) return { ep: [], moe: [] };
    const moe = await getJson(`/api/moe${q}`);
    return { ep: ep.instances ?? [], moe: moe.instances ?? [] };
  },

  render(body, { ep, moe }, ctx) {
    if (ep.length === 0 && moe.length === 0) {
      body.append(note(`No expert-parallel records for job ${ctx.job ?? '(none)'} yet.`, { 'data-empty': '' }));
      return 'empty';
    }
    const charts = [];
    if (ep.length) {
      if (st.instance >= ep.length) st.instance = 0;
      const e = ep[st.instance];
      const layers = (e.layers ?? []).slice(0, MAX_LAYERS);
      const ranks = (e.ranks ?? []).slice(0, MAX_RANKS);
      const data = [];
      let max = 1;
      layers.forEach((l, li) =>
        ranks.forEach((r, ri) => {
          const v = e.ratio_to_layer_mean?.[li]?.[ri];
          if (v != null) {
            data.push([ri, li, Number(v.toFixed(3))]);
            max = Math.max(max, v);
          }
        }),
      );
      const hm = chart(
        'ep-heatmap',
        {
          tooltip: { position: 'top', confine: true, formatter: (p) => esc(`layer ${layers[p.value[1]]}, rank ${ranks[p.value[0]]}: ${p.value[2]} × layer mean`) },
          grid: { left: 60, right: 20, top: 36, bottom: 80, containLabel: true },
          xAxis: { type: 'category', name: 'EP rank', data: ranks, splitArea: { show: true } },
          yAxis: { type: 'category', name: 'MoE layer', data: layers.map(String), splitArea: { show: true } },
          visualMap: { min: Math.min(0.5, 2 - max), max: Math.max(1.5, max), precision: 2, calculable: true, orient: 'horizontal', left: 'center', bottom: 0, inRange: { color: ['#2f6fde', '#f4f4f4', '#c9342b'] } },
          series: [{ name: 'time / layer mean', type: 'heatmap', data, label: { show: layers.length * ranks.length <= 64 } }],
        },
        { height: Math.min(520, 140 + layers.length * 26) },
      );
      charts.push(hm);
      const pick = ep.length > 1 ? select('ep-instance', ep.map((x, i) => [i, `${x.job}/${x.instance}`]), st.instance, (v) => { st.instance = Number(v); ctx.rerender(); }) : null;
      body.append(
        panel(
          `EP balance, ${e.job}/${e.instance}: ${e.moe_layers ?? layers.length} MoE layers x ${ranks.length} ranks (max ${fmt(e.max_ratio_to_layer_mean, 2)} × layer mean)`,
          pick ? [pick] : null,
          hm.div,
          table(
            'ep-ranks',
            [
              { key: 'rank', label: 'EP rank' },
              { key: 'total', label: 'total ms', cls: 'num', fmt: (v) => fmt(v / 1e6, 3) },
            ],
            ranks.map((r, i) => ({ rank: r, total: e.rank_total_ns?.[i] })),
          ),
        ),
      );
    }
    for (const m of moe.slice(0, 4)) {
      for (const op of (m.ops ?? []).slice(0, 8)) {
        const rs = (op.ranks ?? []).slice(0, MAX_RANKS);
        const us = (ns) => (ns == null ? null : ns / 1e3);
        // Range p2.5..p97.5 as a floating bar (an invisible base bar, then the range), p50 and mean as markers.
        const c = chart(
          `moe-${op.op}`,
          {
            ...base,
            legend: { top: 0, data: ['p2.5–p97.5', 'p50', 'mean'] },
            tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, confine: true },
            xAxis: { type: 'category', name: 'rank', data: rs.map((r) => r.rank) },
            yAxis: { type: 'value', name: 'µs' },
            series: [
              { name: 'base', type: 'bar', stack: 'r', itemStyle: { color: 'transparent' }, tooltip: { show: false }, data: rs.map((r) => us(r.p2_5_ns)) },
              { name: 'p2.5–p97.5', type: 'bar', stack: 'r', itemStyle: { color: '#9db8ee' }, data: rs.map((r) => us(r.p97_5_ns - r.p2_5_ns)) },
              { name: 'p50', type: 'scatter', symbol: 'rect', symbolSize: [24, 3], itemStyle: { color: '#1d2330' }, data: rs.map((r) => us(r.p50_ns)) },
              { name: 'mean', type: 'scatter', symbol: 'diamond', symbolSize: 9, itemStyle: { color: '#c9342b' }, data: rs.map((r) => us(r.mean_ns)) },
            ],
          },
          { height: 240 },
        );
        c.div.dataset.chartGroup = 'moe';
        charts.push(c);
        body.append(panel(`MoE ${op.op} per rank, ${m.job}/${m.instance} (slowest rank ${op.slowest_rank ?? '\u2013'})`, null, c.div));
      }
    }
    const moeRows = moe.flatMap((m) => (m.ops ?? []).flatMap((op) => (op.ranks ?? []).map((r) => ({ instance: m.instance, op: op.op, ...r }))));
    if (moeRows.length) {
      body.append(
        panel(
          'MoE distributions',
          null,
          table(
            'moe',
            [
              { key: 'instance', label: 'instance' },
              { key: 'op', label: 'op' },
              { key: 'rank', label: 'rank' },
              { key: 'count', label: 'calls', cls: 'num' },
              { key: 'p2_5_ns', label: 'p2.5 µs', cls: 'num', fmt: (v) => fmt(v / 1e3, 2) },
              { key: 'p50_ns', label: 'p50 µs', cls: 'num', fmt: (v) => fmt(v / 1e3, 2) },
              { key: 'mean_ns', label: 'mean µs', cls: 'num', fmt: (v) => fmt(v / 1e3, 2) },
              { key: 'p97_5_ns', label: 'p97.5 µs', cls: 'num', fmt: (v) => fmt(v / 1e3, 2) },
              { key: 'slowest_share', label: 'slowest share', cls: 'num', fmt: (v) => fmt(v * 100, 1) + ' %' },
            ],
            moeRows,
          ),
        ),
      );
    }
    for (const c of charts) c.draw();
    return 'ready';
  },
};
