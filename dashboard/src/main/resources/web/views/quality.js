// #/quality: data-quality anomalies (by kind, newest) and dead-lettered records (by origin, newest).
import { base, chart, el, fmt, getJson, note, panel, qs, table } from '../lib.js';

const LIMIT = 100;

export default {
  name: 'quality',
  title: 'Data quality',
  topics: ['llmprof.anomalies', 'llmprof.dlq'],

  async fetch(ctx) {
    const [anomalies, dead] = await Promise.all([
      getJson(`/api/anomalies${qs({ job: ctx.job, limit: LIMIT })}`),
      getJson(`/api/dead-letters${qs({ limit: LIMIT })}`),
    ]);
    return { anomalies, dead };
  },

  render(body, { anomalies, dead }) {
    const total = anomalies.total + dead.total;
    body.append(
      el(
        'div',
        { class: 'stats' },
        el('div', { class: 'stat' }, el('b', { 'data-count': 'anomalies' }, fmt(anomalies.total, 0)), el('span', {}, 'anomalies')),
        el('div', { class: 'stat' }, el('b', { 'data-count': 'dead-letters' }, fmt(dead.total, 0)), el('span', {}, 'dead-lettered records')),
        ...Object.entries(dead.by_origin).map(([o, n]) => el('div', { class: 'stat' }, el('b', {}, fmt(n, 0)), el('span', {}, `dead letters from ${o}`))),
      ),
    );
    if (total === 0) {
      body.append(note('No data yet: no anomalies and no dead-lettered records (good news).', { 'data-empty': '' }));
      return 'empty';
    }
    const kinds = anomalies.by_kind;
    const c = chart(
      'anomalies-by-kind',
      {
        ...base,
        legend: { show: false },
        tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, confine: true },
        xAxis: { type: 'category', data: kinds.map((k) => `${k.kind} (${k.severity})`), axisLabel: { rotate: kinds.length > 6 ? 30 : 0 } },
        yAxis: { type: 'value', name: 'anomalies' },
        series: [{ type: 'bar', name: 'anomalies', data: kinds.map((k) => ({ value: k.count, itemStyle: { color: k.severity === 'ERROR' || k.severity === 'HIGH' || k.severity === 'UNKNOWN' ? '#c9342b' : '#c88a04' } })) }],
      },
      { height: 220 },
    );
    body.append(
      panel(
        'Anomalies',
        null,
        c.div,
        table(
          'anomalies',
          [
            { key: 'kind', label: 'kind' },
            { key: 'severity', label: 'severity', fmt: (v) => el('span', { class: 'pill ' + (v ?? '') }, v ?? '\u2013') },
            { key: 'job', label: 'job' },
            { key: 'rank', label: 'rank' },
            { key: 'where', label: 'where' },
            { get: (a) => a.message ?? a.unreadable ?? a.value_preview, label: 'message', cls: 'wrap' },
          ],
          anomalies.latest,
          { total: anomalies.total },
        ),
      ),
      panel(
        'Dead-lettered records',
        null,
        dead.internals === 'hidden' ? note('Stack traces are left out and absolute paths shown as file names (start the dashboard with --show-internals to see them).', { 'data-internals': 'hidden' }) : null,
        table(
          'dead-letters',
          [
            { key: 'timestamp_ms', label: 'time', fmt: (v) => (v ? new Date(v).toISOString().replace('T', ' ').slice(0, 23) : '\u2013') },
            { key: 'origin', label: 'origin' },
            { get: (d) => `${d.topic}-${d.partition}@${d.offset}`, label: 'record' },
            {
              get: (d) => Object.entries(d.headers ?? {}),
              label: 'headers (hover for the full text)',
              cls: 'wrap',
              fmt: (hs) => el('div', {}, hs.map(([k, v]) => el('div', { title: `${k}=${v}` }, `${k}=${v.length > 160 ? v.slice(0, 160) + '\u2026' : v}`))),
            },
            { key: 'value_bytes', label: 'bytes', cls: 'num' },
            { key: 'value_preview', label: 'value (first 256 bytes)', cls: 'wrap' },
          ],
          dead.latest,
          { total: dead.total },
        ),
      ),
    );
    c.draw();
    return 'ready';
  },
};
