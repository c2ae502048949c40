// "Open in Perfetto" for a pass or a layer: opens the range's ui.perfetto.dev link (visStart/visEnd) in a new tab
// and shows the SQL query and the times relative to the trace start, with copy buttons (the trace itself must be
// opened in Perfetto by the user: the link only sets the visible window).
import { el, fmt, getJson, qs } from '../lib.js';

const PERFETTO = 'https://ui.perfetto.dev/';

export async function perfettoPanel(root, ctx, rank, pass, layer) {
  root.dataset.state = 'loading';
  try {
    const r = await getJson(`/api/ranks/${encodeURIComponent(rank)}/passes/${pass}/perfetto${qs({ job: ctx.job })}`);
    const range = layer === null ? r.range : (r.layers ?? []).find((l) => String(l.layer) === String(layer))?.range;
    if (!range) throw new Error(`no Perfetto range for pass ${pass}${layer === null ? '' : ' layer ' + layer}`);
    // Only ever open Perfetto's own UI: a link of another scheme (javascript:) or host is refused.
    if (!String(range.link).startsWith(PERFETTO)) throw new Error(`not a ${PERFETTO} link: ${range.link}`);
    window.open(range.link, '_blank', 'noopener');
    root.replaceChildren(
      el('h4', {}, `Perfetto: ${range.label}`),
      el(
        'p',
        {},
        `From ${fmt(range.start_us, 3)} µs to ${fmt(range.end_us, 3)} µs after the trace start (${fmt(range.dur_us, 3)} µs). `,
        el('a', { href: range.link, target: '_blank', rel: 'noopener', 'data-link': 'perfetto' }, 'open ui.perfetto.dev again'),
        ' (load the trace file there; the link sets the visible window).',
      ),
      el('pre', { 'data-query': '' }, range.query),
      el('button', { 'data-action': 'copy-query', onclick: () => copy(range.query, root) }, 'Copy SQL'),
      ' ',
      el('button', { 'data-action': 'copy-link', onclick: () => copy(range.link, root) }, 'Copy link'),
      el('span', { class: 'note', 'data-copied': '' }),
    );
    root.dataset.state = 'ready';
  } catch (e) {
    root.replaceChildren(el('p', { class: 'error', 'data-error': '' }, e.message));
    root.dataset.state = 'error';
  }
}

async function copy(text, root) {
  const out = root.querySelector('[data-copied]');
  try {
    await navigator.clipboard.writeText(text);
    out.textContent = ' copied';
  } catch (e) {
    // No clipboard permission (plain http, headless): select the text so Ctrl-C copies it.
    const pre = root.querySelector('pre');
    const sel = window.getSelection();
    const range = document.createRange();
    range.selectNodeContents(pre);
    sel.removeAllRanges();
    sel.addRange(range);
    out.textContent = ' selected: press Ctrl-C to copy';
  }
}
