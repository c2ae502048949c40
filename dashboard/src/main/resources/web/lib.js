// Shared helpers of the llmprof page: fetching JSON, drawing ECharts charts, plain HTML tables, formatting.
// Plain ES2020 module, no build step. Charts are drawn only by Apache ECharts (the WebJar loaded by index.html).

/** Most rows any table shows (the page stays light whatever the server holds). */
export const MAX_ROWS = 100;

/** An HTTP error with the server's message ({"error", "message"} bodies) and status. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const TOKEN_KEY = 'llmprof.apiToken';
let tokenAsked = false;

/** The API token this tab was given (sessionStorage: gone when the tab closes), or null. */
export function apiToken() {
  return sessionStorage.getItem(TOKEN_KEY);
}

/** {Authorization: Bearer ...} when the page holds a token, else {}. */
export function authHeaders() {
  const t = apiToken();
  return t ? { Authorization: `Bearer ${t}` } : {};
}

/**
 * The dashboard answered 401: ask for the token once per page load (the server was started with
 * LLMPROF_API_TOKEN or --api-token-file). True when a new token was entered.
 */
function askToken() {
  if (tokenAsked) return false;
  tokenAsked = true;
  const t = window.prompt('This llmprof dashboard needs its API token (LLMPROF_API_TOKEN where it runs):', '');
  if (!t || !t.trim()) return false;
  sessionStorage.setItem(TOKEN_KEY, t.trim());
  window.dispatchEvent(new Event('llmprof-token'));
  return true;
}

/** fetch() with the token, asking for it once on a 401 and trying again. */
export async function authFetch(url, init = {}) {
  const go = () => fetch(url, { ...init, headers: { ...(init.headers ?? {}), ...authHeaders() } });
  let r = await go();
  if (r.status === 401 && askToken()) r = await go();
  return r;
}

/** GET a JSON document; rejects with ApiError (server message) or a network error. Aborts after 15 s. */
export async function getJson(url) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), 15000);
  try {
    const r = await authFetch(url, { signal: ctl.signal, headers: { Accept: 'application/json' } });
    const text = await r.text();
    let body = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch (e) {
      throw new ApiError(r.status, 'bad_json', `${url}: answer is not JSON (${r.status})`);
    }
    if (!r.ok) {
      throw new ApiError(r.status, body?.error ?? 'http_' + r.status, body?.message ?? `${url}: HTTP ${r.status}`);
    }
    return body;
  } catch (e) {
    if (e.name === 'AbortError') throw new ApiError(0, 'timeout', `${url}: no answer within 15 s`);
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

/** Like getJson, but answers `fallback` for the given HTTP statuses (e.g. 404 of an endpoint not there yet). */
export async function getJsonOr(url, fallback, statuses = [404]) {
  try {
    return await getJson(url);
  } catch (e) {
    if (e instanceof ApiError && statuses.includes(e.status)) return fallback;
    throw e;
  }
}

/** A query string of the defined, non-empty parameters ("" when none). */
export function qs(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') p.set(k, v);
  }
  const s = p.toString();
  return s ? '?' + s : '';
}

/** Creates an element: el('div', {class: 'x', 'data-chart': 'y'}, child, 'text', ...). */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

/**
 * Escapes text for HTML: the one helper for every string from data that ends up in markup (ECharts tooltip
 * formatters render their answer as HTML). Everything else goes through el()/textContent, which never parses.
 */
export function esc(v) {
  return String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

/** Number formatting: null/NaN as an en dash, otherwise `digits` decimals, thousands separated. */
export function fmt(v, digits = 1) {
  if (v === null || v === undefined || Number.isNaN(v)) return '\u2013';
  if (typeof v !== 'number') return String(v);
  return v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** A ratio (0..1) as a percentage. */
export function pct(v, digits = 1) {
  return v === null || v === undefined ? '\u2013' : fmt(v * 100, digits) + ' %';
}

/**
 * A plain HTML table: columns [{key|get, label, fmt?, cls?}], at most MAX_ROWS rows (the caller says how many
 * there were in total). `onRow(row, tr)` makes rows clickable.
 */
export function table(name, columns, rows, { onRow, total, selected } = {}) {
  const shown = rows.slice(0, MAX_ROWS);
  const head = el('tr', {}, columns.map((c) => el('th', { class: c.cls }, c.label)));
  const body = shown.map((r, i) => {
    const tr = el(
      'tr',
      { 'data-row': i, class: [onRow ? 'clickable' : '', selected && selected(r) ? 'selected' : ''].join(' ').trim() || null },
      columns.map((c) => {
        const raw = c.get ? c.get(r) : r[c.key];
        const v = c.fmt ? c.fmt(raw, r) : raw;
        return el('td', { class: c.cls }, v instanceof Node ? v : v === null || v === undefined ? '\u2013' : String(v));
      }),
    );
    if (onRow) tr.addEventListener('click', () => onRow(r, tr));
    return tr;
  });
  const t = el('table', { 'data-table': name }, el('thead', {}, head), el('tbody', {}, body));
  const n = total ?? rows.length;
  if (n > shown.length) {
    return el('div', { class: 'table-wrap' }, t, el('p', { class: 'note' }, `showing ${shown.length} of ${n}`));
  }
  return el('div', { class: 'table-wrap' }, t);
}

/**
 * A chart container with an ECharts instance. Instances are tracked so a view can dispose of its charts when it
 * redraws, and all charts follow the window size.
 */
const charts = new Set();

export function chart(name, option, { height = 280, onClick, onAxisClick } = {}) {
  const div = el('div', { 'data-chart': name, class: 'chart' });
  // CSSOM, not a style attribute: the page's Content-Security-Policy refuses inline style attributes in markup.
  div.style.height = `${height}px`;
  // ECharts needs the element in the document to size itself: the caller appends it, then calls draw().
  const handle = {
    div,
    instance: null,
    draw() {
      if (typeof echarts === 'undefined') throw new Error('ECharts did not load (/webjars/echarts/...)');
      this.instance = echarts.init(div, null, { renderer: 'canvas' });
      this.instance.setOption({ animation: false, ...option });
      if (onClick) this.instance.on('click', onClick);
      if (onAxisClick) {
        // A click anywhere in the plot picks the nearest category of the x axis (not only on a symbol).
        const inst = this.instance;
        inst.getZr().on('click', (e) => {
          if (!inst.containPixel({ gridIndex: 0 }, [e.offsetX, e.offsetY])) return;
          const [x] = inst.convertFromPixel({ gridIndex: 0 }, [e.offsetX, e.offsetY]);
          if (Number.isFinite(x)) onAxisClick(Math.round(x));
        });
      }
      charts.add(this.instance);
      return this;
    },
    update(partial) {
      this.instance?.setOption(partial);
    },
  };
  return handle;
}

/** Disposes of the charts inside `root` (before a view replaces its content). */
export function disposeCharts(root) {
  for (const div of root.querySelectorAll('[data-chart]')) {
    const inst = typeof echarts !== 'undefined' ? echarts.getInstanceByDom(div) : null;
    if (inst) {
      charts.delete(inst);
      inst.dispose();
    }
  }
}

window.addEventListener('resize', debounce(() => charts.forEach((c) => c.resize()), 200));

/** Calls fn at most once per `ms`, after the last call (trailing). */
export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

/**
 * Calls fn at most once per `ms`: the first call runs at once, later calls within the interval coalesce into one
 * run at its end (so a burst of live events refreshes a view once a second, never once per event).
 */
export function throttle(fn, ms) {
  let last = 0;
  let timer = null;
  let args = [];
  return (...a) => {
    args = a;
    const wait = last + ms - Date.now();
    if (timer) return;
    if (wait <= 0) {
      last = Date.now();
      fn(...args);
    } else {
      timer = setTimeout(() => {
        timer = null;
        last = Date.now();
        fn(...args);
      }, wait);
    }
  };
}

/** A titled panel with optional tools (pickers, buttons) on the right. */
export function panel(title, tools, ...content) {
  return el('div', { class: 'panel' }, el('div', { class: 'panel-head' }, el('h3', {}, title), el('div', { class: 'tools' }, tools)), ...content);
}

/** A note line (e.g. why a panel is empty). */
export function note(text, attrs = {}) {
  return el('p', { class: 'note', ...attrs }, text);
}

/**
 * Where a rank ran: its `hardware_line` from /api/ranks (`r` an item of it) as a note, hidden while no hardware
 * record of the rank arrived. `data-hardware` holds the rank key, so setHardware() can fill it in live.
 */
export function hardwareNote(r) {
  const n = el('p', { class: 'note', 'data-hardware': r?.key ?? '' });
  setHardware(n, r);
  return n;
}

/** Sets a hardwareNote's line: as text only (textContent), never parsed as markup. */
export function setHardware(n, r) {
  const line = r?.hardware_line ?? '';
  n.textContent = line;
  n.hidden = line === '';
}

/** Common axis/tooltip defaults of the charts. */
export const base = {
  grid: { left: 60, right: 20, top: 36, bottom: 40, containLabel: true },
  tooltip: { trigger: 'axis', confine: true },
  legend: { top: 0, type: 'scroll' },
};

/** A <select> with the given options ([value, label] or value), calling onChange(value). */
export function select(name, options, value, onChange) {
  const s = el(
    'select',
    { 'data-control': name },
    options.map((o) => {
      const [v, l] = Array.isArray(o) ? o : [o, o];
      return el('option', { value: v, selected: String(v) === String(value) }, l);
    }),
  );
  s.addEventListener('change', () => onChange(s.value));
  return s;
}

/**
 * The live stream with the API token: EventSource cannot send an Authorization header, so the stream is read with
 * fetch and parsed here. Same surface as EventSource for what the page uses (onopen, onerror, addEventListener,
 * close); reconnects after 3 s like EventSource does.
 */
export class TokenEventSource {
  constructor(url) {
    this.url = url;
    this.listeners = new Map();
    this.onopen = null;
    this.onerror = null;
    this.closed = false;
    this.ctl = null;
    this.run();
  }

  addEventListener(name, fn) {
    if (!this.listeners.has(name)) this.listeners.set(name, []);
    this.listeners.get(name).push(fn);
  }

  close() {
    this.closed = true;
    this.ctl?.abort();
  }

  async run() {
    while (!this.closed) {
      try {
        this.ctl = new AbortController();
        const r = await fetch(this.url, { signal: this.ctl.signal, headers: { Accept: 'text/event-stream', ...authHeaders() } });
        if (!r.ok || !r.body) throw new Error(`HTTP ${r.status}`);
        this.onopen?.();
        const reader = r.body.getReader();
        const dec = new TextDecoder();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            this.dispatch(buf.slice(0, i));
            buf = buf.slice(i + 2);
          }
        }
      } catch (e) {
        if (this.closed) return;
      }
      this.onerror?.();
      await new Promise((res) => setTimeout(res, 3000));
    }
  }

  dispatch(block) {
    let name = 'message';
    const data = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event:')) name = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (!data.length) return;
    const event = { data: data.join('\n') };
    for (const fn of this.listeners.get(name) ?? []) fn(event);
  }
}
