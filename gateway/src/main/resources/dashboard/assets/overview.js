// Operational cards, budget and quota, policy, provider health, recent denials and the live lifecycle feed.
import { h, fill, table, iso } from './dom.js';
import { nearingTtl, ratio, usd, duration } from './lib.js';

/** The statuses of a sandbox that still holds resources. */
const LIVE = ['creating', 'running', 'stopping'];
/** The failed-launches card counts the last day's, up to one page. */
const FAILED_WINDOW_MS = 24 * 3600 * 1000;
const FAILED_PAGE = 100;

export class Overview {
  constructor(app, root) {
    this.app = app;
    this.cards = h('div', { class: 'cards', id: 'cards' });
    this.budget = h('section', { class: 'panel', id: 'budget', 'aria-labelledby': 'budget-title' });
    this.providers = h('section', { class: 'panel', id: 'providers', 'aria-labelledby': 'providers-title' });
    this.denials = h('section', { class: 'panel wide', id: 'denials', 'aria-labelledby': 'denials-title' });
    this.feedList = h('ol', { class: 'feed', id: 'live-feed', 'aria-live': 'polite' });
    this.feedPanel = h('section', { class: 'panel wide', 'aria-labelledby': 'feed-title' },
      h('h2', { id: 'feed-title' }, 'Live lifecycle feed'),
      h('p', { class: 'muted' }, 'New, running and ended sandboxes appear here as they change (pushed by the gateway).'), this.feedList);
    fill(root, this.cards, h('div', { class: 'grid' }, this.budget, this.providers, this.denials, this.feedPanel));
  }

  /** One pushed lifecycle change ({sandbox_id, type, status, occurred_at}), newest first. */
  feed(change) {
    const what = change.type.replace(/^sandbox\./, '');
    const known = this.app.sandboxes.concat(this.app.list.rows).find((s) => s.id === change.sandbox_id);
    const item = h('li', { dataset: { status: change.status } },
      h('time', { datetime: change.occurred_at }, new Date(change.occurred_at).toLocaleTimeString()), ' ',
      h('button', { type: 'button', class: 'link', onclick: () => this.app.open(change.sandbox_id) }, change.sandbox_id),
      ` ${what}${known ? ` (${known.backend})` : ''} → ${change.status}`);
    this.feedList.prepend(item);
    while (this.feedList.children.length > 50) this.feedList.lastElementChild.remove();
  }

  async render() {
    const app = this.app;
    // the cards read only what they count, never the whole list: the live sandboxes, and the launches that
    // failed in the last day (one page of them)
    const now = Date.now();
    let failed = { items: [], next: null };
    app.sandboxes = [];
    if (app.readsSandboxes()) {
      const since = new Date(now - FAILED_WINDOW_MS).toISOString();
      [app.sandboxes, failed] = await Promise.all([
        app.client.get(`/v1/sandboxes?status=${LIVE.join(',')}`),
        app.client.page(`/v1/sandboxes?status=failed&created_after=${encodeURIComponent(since)}&limit=${FAILED_PAGE}`)]);
    }
    const active = app.sandboxes;
    const nearing = nearingTtl(active, now);
    let reconciliation = null;
    try {
      reconciliation = await app.client.get('/v1/reconciliation');
    } catch {
      reconciliation = null;
    }
    fill(this.cards,
      card('Active resources', active.length, 'creating, running or stopping'),
      card('Failed launches', failed.next ? `${failed.items.length}+` : failed.items.length, failed.items.length
        ? `in the last 24 hours; latest ${iso(failed.items[0].failed_at || failed.items[0].created_at)}`
        : 'none in the last 24 hours'),
      card('Unreconciled sandboxes', reconciliation ? reconciliation.unreconciled : '–',
        reconciliation ? `${reconciliation.missing} missing at their provider` : 'needs sandboxes:read'),
      card('Nearing their TTL', nearing.length, 'deadline within 15 minutes'));
    await Promise.all([this.renderBudget(), this.renderProviders()]);
  }

  async renderBudget() {
    if (!this.app.can('can_view_policy')) {
      fill(this.budget, h('h2', { id: 'budget-title' }, 'Budget and policy'),
        h('p', { class: 'muted' }, 'This key cannot read policies and usage.'));
      fill(this.denials, h('h2', { id: 'denials-title' }, 'Recent policy denials'),
        h('p', { class: 'muted' }, 'This key cannot read policies.'));
      return;
    }
    const s = await this.app.client.get('/v1/policy-summary');
    const p = s.policy;
    const u = s.usage;
    fill(this.budget, h('h2', { id: 'budget-title' }, 'Budget and policy'),
      meter('Concurrent sandboxes', u.active_sandboxes, p.max_concurrent_sandboxes, String),
      meter('Spend this hour', u.hourly_spend_usd, p.hourly_spend_limit_usd, usd),
      meter('Spend today', u.daily_spend_usd, p.daily_spend_limit_usd, usd),
      h('dl', { class: 'facts' },
        h('dt', {}, 'Backends'), h('dd', {}, p.allowed_backends ? p.allowed_backends.join(', ') || 'none' : 'all enabled'),
        h('dt', {}, 'GPU types'), h('dd', {}, p.allowed_gpu_types ? p.allowed_gpu_types.join(', ') || 'none' : 'any'),
        h('dt', {}, 'Longest lifetime'),
        h('dd', {}, p.max_sandbox_lifetime_secs ? duration(p.max_sandbox_lifetime_secs) : 'unlimited')));
    fill(this.denials, table('Recent policy denials', [
      { label: 'When', cell: (d) => iso(d.created_at) },
      { label: 'Policy', cell: (d) => d.policy },
      { label: 'Message', cell: (d) => d.message },
      { label: 'Asked', cell: asked },
      { label: 'Limit', cell: (d) => d.limit_value ?? '–' },
      { label: 'Key', cell: (d) => d.api_key_name || d.api_key_id || '–' },
    ], s.denials || [], 'No denials.'));
    this.denials.querySelector('caption').id = 'denials-title';
  }

  async renderProviders() {
    if (!this.app.can('can_view_providers')) {
      fill(this.providers, h('h2', { id: 'providers-title' }, 'Provider health'),
        h('p', { class: 'muted' }, 'This key cannot read providers.'));
      return;
    }
    const r = await this.app.client.get('/v1/providers');
    fill(this.providers, table('Provider health', [
      { label: 'Backend', cell: (p) => p.backend },
      { label: 'Status', cell: (p) => h('span', { class: `badge ${p.status}` }, p.status) },
      { label: 'Ready here', cell: (p) => (p.configured ? 'yes' : 'no') },
      { label: 'Checked', cell: (p) => iso(p.checked_at) },
      { label: 'Message', cell: (p) => p.message || '' },
    ], r.items));
    this.providers.querySelector('caption').id = 'providers-title';
  }
}

/** What the refused create asked for, as the policy measured it (a create without a lifetime has none). */
function asked(d) {
  if (d.current_value !== null && d.current_value !== undefined) return d.current_value;
  return d.policy === 'max_sandbox_lifetime_secs' ? 'no lifetime' : '–';
}

function card(title, value, note) {
  return h('div', { class: 'card' }, h('h2', {}, title), h('p', { class: 'big' }, String(value)),
    h('p', { class: 'muted' }, note));
}

function meter(label, used, limit, format) {
  const r = ratio(used, limit);
  return h('div', { class: 'meter' },
    h('span', {}, label),
    r === null ? h('span', { class: 'muted' }, `${format(used)} (no limit)`)
      : h('progress', { max: '100', value: String(Math.round(r * 100)), 'aria-label': label }),
    r === null ? null : h('span', {}, `${format(used)} of ${format(limit)}`));
}
