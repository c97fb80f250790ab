// Building DOM nodes without innerHTML: every value is text, never markup.

/** h('button', {class: 'x', onclick: f, 'aria-label': 'y'}, 'text', node, ...) */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

const SVG = 'http://www.w3.org/2000/svg';

export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  append(el, children);
  return el;
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A table: columns [{label, cell(row) -> node|text, class?}], with a caption and an empty message. */
export function table(caption, columns, rows, empty = 'Nothing here yet.') {
  return h('table', {},
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col', class: c.class }, c.label)))),
    h('tbody', {}, rows.length === 0
      ? h('tr', {}, h('td', { colspan: columns.length, class: 'muted' }, empty))
      : rows.map((r) => h('tr', {}, columns.map((c) => h('td', { class: c.class }, c.cell(r)))))));
}

export function iso(ts) {
  return ts ? ts.replace('T', ' ').replace(/(\.\d+)?(\+00:00|Z)$/, ' UTC') : '–';
}

/** Runs a re-render of container and puts the focus back on the equivalent element (by id or data key). */
export function keepFocus(container, render) {
  const active = document.activeElement;
  let selector = null;
  if (active && active !== document.body && container.contains(active)) {
    if (active.id) selector = `#${CSS.escape(active.id)}`;
    else if (active.dataset.sandbox) selector = `[data-sandbox="${CSS.escape(active.dataset.sandbox)}"]`;
    else if (active.dataset.execution) selector = `[data-execution="${CSS.escape(active.dataset.execution)}"]`;
  }
  render();
  if (selector) container.querySelector(selector)?.focus();
}
