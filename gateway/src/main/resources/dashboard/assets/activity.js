// Alerts and the audit trail (paged with their cursors), and CSV exports, each for keys that may see them.
import { h, fill, table, iso } from './dom.js';

const EXPORTS = [['usage', 'Usage'], ['costs', 'Lifecycle costs'], ['ledger', 'Ledger']];

export class Activity {
  constructor(app, root) {
    this.app = app;
    this.exports = h('section', { class: 'panel', id: 'exports', 'aria-labelledby': 'exports-title' });
    this.alerts = new Paged(app, '/v1/alerts', 'Alerts', [
      { label: 'When', cell: (a) => iso(a.created_at) }, { label: 'Type', cell: (a) => a.alert_type },
      { label: 'Severity', cell: (a) => h('span', { class: `badge ${a.severity}` }, a.severity) },
      { label: 'Message', cell: (a) => a.message }, { label: 'Resource', class: 'mono', cell: (a) => a.resource_id || '–' },
    ], 'alerts');
    this.audit = new Paged(app, '/v1/audit', 'Audit trail', [
      { label: 'When', cell: (a) => iso(a.created_at) }, { label: 'Action', cell: (a) => a.action },
      { label: 'Outcome', cell: (a) => h('span', { class: `badge ${a.outcome}` }, a.outcome) },
      { label: 'Resource', class: 'mono', cell: (a) => a.resource_id }, { label: 'Key', cell: (a) => a.api_key_name || a.api_key_id || '–' },
    ], 'audit');
    fill(root, this.exports, this.alerts.root, this.audit.root);
  }

  async render(manual) {
    const app = this.app;
    this.exports.hidden = !app.can('can_export');
    fill(this.exports, h('h2', { id: 'exports-title' }, 'CSV exports'),
      h('ul', { class: 'links' }, EXPORTS.map(([kind, label]) => h('li', {}, h('a', {
        href: `/v1/exports/${kind}.csv`, id: `export-${kind}`, download: `bespoke-${kind}.csv`,
        onclick: (e) => {
          e.preventDefault();
          app.client.download(`/v1/exports/${kind}.csv`, `bespoke-${kind}.csv`)
            .catch((err) => app.flash(`Export failed: ${err.message}`, true));
        },
      }, `${label} (CSV)`)))));
    this.alerts.root.hidden = !app.can('can_view_alerts');
    this.audit.root.hidden = !app.can('can_view_audit');
    const work = [];
    if (!this.alerts.root.hidden) work.push(this.alerts.load(manual));
    if (!this.audit.root.hidden) work.push(this.audit.load(manual));
    await Promise.all(work);
  }
}

/** A list that follows next_cursor with a "Load more" button; refreshes reload its first page. */
class Paged {
  constructor(app, path, title, columns, id) {
    this.app = app;
    this.path = path;
    this.title = title;
    this.columns = columns;
    this.items = [];
    this.cursor = null;
    this.box = h('div', { class: 'table-box' });
    this.more = h('button', { type: 'button', id: `${id}-more`, onclick: () => this.loadMore() }, 'Load more');
    this.root = h('section', { class: 'panel wide', id }, this.box, this.more);
  }

  async load() {
    if (this.items.length > 50) return; // the operator is reading older pages: leave them
    const r = await this.app.client.get(`${this.path}?limit=50`);
    this.items = r.items;
    this.cursor = r.next_cursor;
    this.draw();
  }

  async loadMore() {
    if (!this.cursor) return;
    const r = await this.app.client.get(`${this.path}?limit=50&cursor=${encodeURIComponent(this.cursor)}`);
    this.items = this.items.concat(r.items);
    this.cursor = r.next_cursor;
    this.draw();
  }

  draw() {
    fill(this.box, table(this.title, this.columns, this.items, 'None.'));
    this.more.hidden = !this.cursor;
  }
}
