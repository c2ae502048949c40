// The llmprof page: hash routes (#/overview, #/passes, ...), one view shown at a time, one EventSource on
// /api/live feeding every view. Each view module exports {name, title, topics, fetch(ctx), render(body, data, ctx)}
// and optionally onPasses(passes, ctx) (live pass summaries) and refresh(ctx) (instead of a full reload).
import { el, getJson, disposeCharts, throttle, apiToken, setHardware, TokenEventSource } from './lib.js';
import overview from './views/overview.js';
import passes from './views/passes.js';
import crossRank from './views/crossrank.js';
import host from './views/host.js';
import service from './views/service.js';
import moe from './views/moe.js';
import quality from './views/quality.js';

const VIEWS = [overview, passes, crossRank, host, service, moe, quality];
const byName = new Map(VIEWS.map((v) => [v.name, v]));

/** What every view sees: the chosen job, the known jobs and ranks, live state, helpers. */
const ctx = {
  job: null,
  jobs: [],
  ranks: [],
  /** Per rank key ("job/rank"): Date.now() of the newest live pass seen. */
  lastLivePass: new Map(),
  liveEvents: 0,
  hello: null,
  /** Records per topic applied since the page opened (from `changed` events). */
  topicCounts: {},
  current: null,
  /** Redraws the current view (views call it after a picker changed). */
  rerender: () => show(ctx.current, { keepScroll: true }),
  /** Ranks of the chosen job, sorted numerically where they are numbers. */
  jobRanks() {
    return ctx.ranks
      .filter((r) => ctx.job === null || r.job === ctx.job)
      .map((r) => r.rank)
      .sort((a, b) => (isNaN(a) || isNaN(b) ? a.localeCompare(b) : Number(a) - Number(b)));
  },
  /** The /api/ranks item of a rank of the chosen job (null when not known). */
  rankInfo(rank) {
    return ctx.ranks.find((r) => String(r.rank) === String(rank) && (ctx.job === null || r.job === ctx.job)) ?? null;
  },
};
window.llmprof = ctx; // for people poking at the page, and for the browser tests' probes

let generation = 0;

async function loadRanks() {
  const body = await getJson('/api/ranks');
  ctx.ranks = body.ranks ?? [];
  const jobs = [...new Set(ctx.ranks.map((r) => r.job))].sort();
  ctx.jobs = jobs;
  if (ctx.job === null || !jobs.includes(ctx.job)) ctx.job = jobs[0] ?? null;
  renderJobPicker();
}

function renderJobPicker() {
  const s = document.querySelector('[data-control="job"]');
  const options = ctx.jobs.length ? ctx.jobs : [''];
  s.replaceChildren(...options.map((j) => el('option', { value: j, selected: j === ctx.job }, j || '(no job yet)')));
}

/** Shows a view: fetches its data, then draws it; sets data-state to ready / empty / error. */
async function show(name, { keepScroll = false } = {}) {
  const view = byName.get(name) ?? overview;
  ctx.current = view.name;
  for (const a of document.querySelectorAll('nav a[data-nav]')) {
    a.classList.toggle('active', a.dataset.nav === view.name);
  }
  for (const s of document.querySelectorAll('section[data-view]')) {
    s.hidden = s.dataset.view !== view.name;
  }
  const section = document.querySelector(`section[data-view="${view.name}"]`);
  const body = section.querySelector('.body');
  const mine = ++generation;
  if (!keepScroll) section.dataset.state = 'loading';
  try {
    if (ctx.ranks.length === 0 || !keepScroll) await loadRanks();
    const data = await view.fetch(ctx);
    if (mine !== generation) return; // a newer show() won
    disposeCharts(body);
    body.replaceChildren();
    const state = view.render(body, data, ctx) ?? 'ready';
    section.dataset.state = state;
  } catch (e) {
    if (mine !== generation) return;
    disposeCharts(body);
    body.replaceChildren(el('p', { class: 'error', 'data-error': '' }, e.message ?? String(e)));
    section.dataset.state = 'error';
  }
}

/** Refreshes the current view when a live event says its topics changed (at most once per second). */
const refreshCurrent = throttle(() => {
  const view = byName.get(ctx.current);
  if (!view) return;
  if (view.refresh) view.refresh(ctx);
  else show(view.name, { keepScroll: true });
}, 1000);

/** Where ranks ran changed (llmprof.rank-hardware): reload the ranks, update the shown hardware lines in place. */
const refreshHardware = throttle(async () => {
  try {
    await loadRanks();
  } catch (e) {
    console.warn('ranks reload failed:', e.message);
    return;
  }
  for (const n of document.querySelectorAll('[data-hardware]')) {
    setHardware(n, ctx.ranks.find((r) => r.key === n.dataset.hardware));
  }
}, 1000);

function route() {
  const name = (location.hash.replace(/^#\/?/, '').split('?')[0] || 'overview').trim();
  show(byName.has(name) ? name : 'overview');
}

function startLive() {
  const badge = document.querySelector('[data-live]');
  const counter = document.querySelector('[data-live-events]');
  const count = () => {
    ctx.liveEvents++;
    counter.textContent = String(ctx.liveEvents);
  };
  ctx.eventSource?.close();
  // With an API token the stream needs an Authorization header, which EventSource cannot send.
  const es = apiToken() ? new TokenEventSource('/api/live') : new EventSource('/api/live');
  es.onopen = () => {
    badge.dataset.live = 'connected';
    badge.textContent = 'live';
  };
  es.onerror = () => {
    // EventSource reconnects by itself; the badge says so.
    badge.dataset.live = 'reconnecting';
    badge.textContent = 'reconnecting';
  };
  es.addEventListener('hello', (e) => {
    count();
    ctx.hello = safeParse(e.data);
  });
  es.addEventListener('pass', (e) => {
    count();
    const data = safeParse(e.data);
    const list = Array.isArray(data) ? data : data?.passes ?? [];
    const now = Date.now();
    for (const p of list) ctx.lastLivePass.set(p.key ?? `${p.job}/${p.rank}`, now);
    const view = byName.get(ctx.current);
    if (view?.onPasses && list.length) {
      try {
        view.onPasses(list, ctx, data?.dropped ?? 0);
      } catch (err) {
        console.warn('live passes not applied:', err);
      }
    }
  });
  es.addEventListener('changed', (e) => {
    count();
    const data = safeParse(e.data);
    const topics = Object.keys(data?.topics ?? {});
    for (const t of topics) ctx.topicCounts[t] = (ctx.topicCounts[t] ?? 0) + data.topics[t];
    const view = byName.get(ctx.current);
    if (view && topics.some((t) => view.topics.includes(t))) refreshCurrent();
    if (topics.includes('llmprof.rank-hardware')) refreshHardware();
  });
  ctx.eventSource = es;
}

// Browsers allow 6 connections per host over HTTP/1.1: a page kept in the back/forward cache with its stream
// open would hold one of them. Close the stream when the page is hidden, open a new one if it comes back.
window.addEventListener('pagehide', () => ctx.eventSource?.close());
// A token was entered after a 401: the live stream (refused without it) starts again with it.
window.addEventListener('llmprof-token', () => startLive());
window.addEventListener('pageshow', (e) => {
  if (e.persisted) startLive();
});

function safeParse(text) {
  try {
    return JSON.parse(text);
  } catch (e) {
    console.warn('live event is not JSON:', text?.slice?.(0, 80));
    return null;
  }
}

function build() {
  const nav = document.querySelector('nav');
  nav.replaceChildren(...VIEWS.map((v) => el('a', { href: `#/${v.name}`, 'data-nav': v.name }, v.title)));
  const main = document.querySelector('main');
  main.replaceChildren(
    ...VIEWS.map((v) =>
      el('section', { 'data-view': v.name, 'data-state': 'loading', hidden: true }, el('h2', {}, v.title), el('div', { class: 'body' })),
    ),
  );
  const job = document.querySelector('[data-control="job"]');
  job.addEventListener('change', () => {
    ctx.job = job.value || null;
    show(ctx.current);
  });
}

window.addEventListener('unhandledrejection', (e) => {
  // Never an uncaught error: show it in the current view instead.
  e.preventDefault();
  const section = document.querySelector(`section[data-view="${ctx.current}"]`);
  section?.querySelector('.body')?.prepend(el('p', { class: 'error', 'data-error': '' }, String(e.reason?.message ?? e.reason)));
});

build();
window.addEventListener('hashchange', route);
route();
startLive();
