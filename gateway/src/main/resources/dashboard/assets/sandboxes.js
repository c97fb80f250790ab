// The sandbox list: status, provider and creation-date filters, client-side pagination (the list route
// answers every sandbox, newest first).
import { h, fill, table, iso, keepFocus } from './dom.js';
import { filterSandboxes, paginate, duration, ageSecs, ttlLeft, usd } from './lib.js';

export const PAGE_SIZE = 10;
const STATUSES = ['creating', 'running', 'stopping', 'destroyed', 'failed'];

export class Sandboxes {
  constructor(app, root) {
    this.app = app;
    this.page = 1;
    this.status = h('select', { id: 'filter-status' }, h('option', { value: '' }, 'any'),
      STATUSES.map((s) => h('option', { value: s }, s)));
    this.backend = h('select', { id: 'filter-backend' }, h('option', { value: '' }, 'any'));
    this.from = h('input', { id: 'filter-from', type: 'date' });
    this.to = h('input', { id: 'filter-to', type: 'date' });
    for (const el of [this.status, this.backend, this.from, this.to]) {
      el.addEventListener('change', () => {
        this.page = 1;
        this.render();
      });
    }
    this.count = h('p', { class: 'muted', id: 'list-count', 'aria-live': 'polite' });
    this.tableBox = h('div', { class: 'table-box', id: 'sandbox-table' });
    this.prev = h('button', { type: 'button', id: 'page-prev', onclick: () => this.go(-1) }, 'Previous');
    this.next = h('button', { type: 'button', id: 'page-next', onclick: () => this.go(1) }, 'Next');
    this.pageLabel = h('span', { id: 'page-label' });
    fill(root,
      h('form', { class: 'filters', 'aria-label': 'Filters', onsubmit: (e) => e.preventDefault() },
        h('label', {}, 'Status ', this.status), h('label', {}, 'Provider ', this.backend),
        h('label', {}, 'Created from ', this.from), h('label', {}, 'to ', this.to)),
      this.count, this.tableBox,
      h('nav', { class: 'pager', 'aria-label': 'Pages' }, this.prev, this.pageLabel, this.next));
  }

  go(delta) {
    this.page += delta;
    this.render();
  }

  render() {
    const all = this.app.sandboxes;
    const backends = [...new Set(all.map((s) => s.backend))].sort();
    const chosen = this.backend.value;
    fill(this.backend, h('option', { value: '' }, 'any'), backends.map((b) => h('option', { value: b }, b)));
    this.backend.value = backends.includes(chosen) ? chosen : '';
    const filtered = filterSandboxes(all, { status: this.status.value, backend: this.backend.value,
      from: this.from.value, to: this.to.value });
    const p = paginate(filtered, this.page, PAGE_SIZE);
    this.page = p.page;
    const now = Date.now();
    this.count.textContent = `${p.total} of ${all.length} sandboxes`;
    this.pageLabel.textContent = `Page ${p.page} of ${p.pages}`;
    this.prev.disabled = p.page <= 1;
    this.next.disabled = p.page >= p.pages;
    keepFocus(this.tableBox, () => fill(this.tableBox, table('Sandboxes', [
      { label: 'Sandbox', cell: (s) => h('button', { type: 'button', class: 'link', dataset: { sandbox: s.id },
        onclick: () => this.app.open(s.id) }, s.id) },
      { label: 'Status', cell: (s) => h('span', { class: `badge ${s.status}` }, s.status) },
      { label: 'Provider', cell: (s) => s.backend },
      { label: 'Creator key', cell: (s) => s.creator_api_key_name || s.creator_api_key_id || '–' },
      { label: 'Provider resource', class: 'mono', cell: (s) => s.provider_resource_id || '–' },
      { label: 'Compute', cell: compute },
      { label: 'Rate', cell: (s) => (s.hourly_rate_usd ? `${usd(s.hourly_rate_usd)}/h` : '–') },
      { label: 'Age', cell: (s) => duration(ageSecs(s.created_at, now)) },
      { label: 'TTL', cell: (s) => ttl(s, now) },
      { label: 'Cleanup', cell: (s) => s.cleanup_status || '–' },
      { label: 'Reconciliation', cell: (s) => (s.provider_missing ? 'missing' : s.cost_state || '–') },
    ], p.items, all.length ? 'No sandbox matches the filters.' : 'No sandboxes yet.')));
    this.tableBox.querySelector('table').title = `created ${iso(all.length ? all[all.length - 1].created_at : null)} onward`;
  }
}

export function compute(s) {
  const c = s.config || {};
  const parts = [];
  if (c.cpu) parts.push(`${c.cpu} CPU`);
  if (c.memory_mb) parts.push(`${c.memory_mb} MB`);
  if (c.gpu) parts.push(`GPU ${c.gpu}`);
  return parts.join(' · ') || 'default';
}

function ttl(s, now) {
  const left = ttlLeft(s, now);
  if (left === null) return '–';
  return left <= 0 ? 'due' : duration(left);
}
