// The sandbox list: status, provider and creation-date filters, ten to a page. The server filters and pages
// the list (GET /v1/sandboxes?limit=10 with the filters, then the page's X-Next-Cursor), so a refresh fetches
// one page, filtered or not.
import { h, fill, table, keepFocus } from './dom.js';
import { CursorPager, sandboxQuery, duration, ageSecs, ttlLeft, usd } from './lib.js';

export const PAGE_SIZE = 10;
const STATUSES = ['creating', 'running', 'stopping', 'destroyed', 'failed'];

export class Sandboxes {
  constructor(app, root) {
    this.app = app;
    this.page = 1;
    this.pager = new CursorPager(PAGE_SIZE);
    this.rows = [];
    this.backends = new Set();
    this.providersAsked = false;
    this.seq = 0;
    this.status = h('select', { id: 'filter-status' }, h('option', { value: '' }, 'any'),
      STATUSES.map((s) => h('option', { value: s }, s)));
    this.backend = h('select', { id: 'filter-backend' }, h('option', { value: '' }, 'any'));
    this.from = h('input', { id: 'filter-from', type: 'date' });
    this.to = h('input', { id: 'filter-to', type: 'date' });
    for (const el of [this.status, this.backend, this.from, this.to]) {
      el.addEventListener('change', () => {
        this.page = 1;
        this.pager.reset();
        this.update();
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
    this.pager.move(delta);
    this.update();
  }

  /** A render asked for by a control of the list: a failure is shown, not thrown. */
  update() {
    this.render().catch((err) => this.app.failed(err));
  }

  filters() {
    return { status: this.status.value, backend: this.backend.value, from: this.from.value, to: this.to.value };
  }

  async render() {
    const seq = ++this.seq;
    if (!this.app.readsSandboxes()) {
      this.show([], { count: 'This key cannot read sandboxes.', label: 'Page 1 of 1', hasPrev: false, hasNext: false },
        'No sandboxes.');
      return;
    }
    await this.askProviders();
    const f = this.filters();
    const filtered = Boolean(f.status || f.backend || f.from || f.to);
    const empty = filtered ? 'No sandbox matches the filters.' : 'No sandboxes yet.';
    const path = sandboxQuery(f, PAGE_SIZE, this.pager.cursor());
    const r = path === null ? { items: [], next: null } : await this.app.client.page(path);
    if (seq !== this.seq) return; // a newer render is under way
    if (r.items.length === 0 && this.pager.page > 1) { // the sandboxes of this page are gone: start over
      this.pager.reset();
      this.page = 1;
      await this.render();
      return;
    }
    const p = this.pager.loaded(r.items.length, r.next);
    this.page = p.page;
    const noun = filtered ? 'Matching sandboxes' : 'Sandboxes';
    const count = p.to === 0 ? empty
      : `${noun} ${p.from}–${p.to}${p.total === null ? ', newest first' : ` of ${p.total}`}`;
    this.show(r.items, { ...p, count }, empty);
  }

  /** The provider filter offers every enabled backend (when the key may list them) and every one seen. */
  async askProviders() {
    if (this.providersAsked || !this.app.can('can_view_providers')) return;
    this.providersAsked = true;
    const r = await this.app.client.get('/v1/providers');
    for (const p of r.items) this.backends.add(p.backend);
  }

  show(rows, p, empty) {
    this.rows = rows;
    for (const s of rows) this.backends.add(s.backend);
    const backends = [...this.backends].sort();
    const chosen = this.backend.value;
    if (this.backend.options.length !== backends.length + 1) {
      fill(this.backend, h('option', { value: '' }, 'any'), backends.map((b) => h('option', { value: b }, b)));
      this.backend.value = backends.includes(chosen) ? chosen : '';
    }
    const now = Date.now();
    this.count.textContent = p.count;
    this.pageLabel.textContent = p.label;
    this.prev.disabled = !p.hasPrev;
    this.next.disabled = !p.hasNext;
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
    ], rows, empty)));
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
