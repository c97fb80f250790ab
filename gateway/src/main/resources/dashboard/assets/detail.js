// One sandbox: lifecycle, placement, attempts, executions (with live output and signals), errors, cost, provider
// observations, and confirmed, revision-safe termination (If-Match).
import { h, fill, table, iso, keepFocus } from './dom.js';
import { ENDED, usd, duration, ifMatch } from './lib.js';
import { ApiError } from './api.js';
import { compute } from './sandboxes.js';

const LIFECYCLE = ['requested_at', 'provisioning_at', 'running_at', 'stopping_at', 'terminated_at', 'failed_at',
  'last_provider_observed_at', 'expires_at'];

export class Detail {
  constructor(app, root) {
    this.app = app;
    this.root = root;
    this.id = null;
    this.data = null;
    this.body = h('div', { id: 'detail-body' });
    this.output = new OutputPanel(app);
    this.dialog = document.getElementById('confirm');
    this.dialogText = document.getElementById('confirm-text');
    this.pendingVersion = null;
    document.getElementById('confirm-yes').addEventListener('click', () => this.terminate());
    document.getElementById('confirm-no').addEventListener('click', () => this.dialog.close());
    fill(root, this.body, this.output.root);
  }

  async open(id) {
    if (this.id !== id) this.output.close();
    this.id = id;
    this.seen = null;
    this.root.hidden = false;
    await this.refresh();
    this.root.querySelector('h2')?.focus();
  }

  close() {
    this.id = null;
    this.data = null;
    this.output.close();
    this.root.hidden = true;
  }

  async refresh() {
    if (!this.id) return;
    try {
      this.data = await this.app.client.get(`/v1/sandboxes/${encodeURIComponent(this.id)}/detail`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        fill(this.body, h('p', { class: 'error' }, 'Sandbox not found.'));
        return;
      }
      throw err;
    }
    const seen = JSON.stringify(this.data);
    if (seen !== this.seen) {
      this.seen = seen;
      keepFocus(this.body, () => this.render());
    }
  }

  render() {
    const { sandbox: s, attempts, executions, cost, provider_observations: observations } = this.data;
    const canTerminate = this.app.can('can_terminate') && !ENDED.has(s.status);
    fill(this.body,
      h('div', { class: 'detail-head' },
        h('h2', { tabindex: '-1', id: 'detail-title' }, s.id),
        h('span', { class: `badge ${s.status}`, id: 'detail-status' }, s.status),
        h('span', { class: 'muted', id: 'detail-version' }, `version ${s.version}`),
        canTerminate ? h('button', { type: 'button', id: 'terminate', class: 'danger',
          onclick: () => this.confirm(s) }, 'Terminate…') : null,
        h('button', { type: 'button', onclick: () => this.close() }, 'Close')),
      h('div', { class: 'grid' },
        h('section', { class: 'panel' }, h('h3', {}, 'Sandbox'), facts([
          ['Provider', s.backend], ['Provider resource', s.provider_resource_id || '–'],
          ['Creator key', s.creator_api_key_name || s.creator_api_key_id || '–'], ['Compute', compute(s)],
          ['Rate', s.hourly_rate_usd ? `${usd(s.hourly_rate_usd)}/h` : '–'], ['Cleanup', s.cleanup_status || '–'],
          ['Retry', s.retry_status || '–'], ['Cost state', s.cost_state || '–'],
          ['Terminated by', s.terminated_by_api_key_name ? `${s.terminated_by_api_key_name} (${s.termination_reason})` : '–'],
        ])),
        h('section', { class: 'panel' }, h('h3', {}, 'Lifecycle'), facts([['created_at', iso(s.created_at)],
          ...LIFECYCLE.filter((k) => s[k]).map((k) => [k.replace(/_at$/, '').replace(/_/g, ' '), iso(s[k])])])),
        h('section', { class: 'panel' }, h('h3', {}, 'Cost'), cost ? facts([
          ['Billable', duration(Number(cost.billable_seconds))], ['Estimated', usd(cost.estimated_cost_usd)],
          ['Provider reported', usd(cost.provider_reported_cost_usd)], ['Effective', usd(cost.effective_cost_usd)],
          ['Customer', usd(cost.customer_cost_usd)], ['Pricing', cost.pricing_source || '–'],
        ]) : h('p', { class: 'muted' }, 'No cost recorded.')),
        h('section', { class: 'panel' }, h('h3', {}, 'Errors'), s.latest_error
          ? h('pre', { class: 'json' }, JSON.stringify(s.latest_error, null, 2))
          : h('p', { class: 'muted' }, s.error || 'None.'))),
      s.placement ? h('section', { id: 'placement' }, table(`Placement (backend auto chose ${s.placement.chosen || 'none yet'})`, [
        { label: 'Backend', cell: (c) => c.backend }, { label: 'Status', cell: (c) => c.status },
        { label: 'Price', cell: (c) => (c.hourly_usd == null ? '–' : `${usd(c.hourly_usd)}/h`) },
        { label: 'Reason', cell: (c) => c.reason || '' },
      ], s.placement.candidates)) : null,
      table('Attempts', [
        { label: '#', cell: (a) => a.attempt_number }, { label: 'Backend', cell: (a) => a.backend || '–' },
        { label: 'Status', cell: (a) => a.status },
        { label: 'Resource', class: 'mono', cell: (a) => a.provider_resource_id || '–' },
        { label: 'Started', cell: (a) => iso(a.started_at) }, { label: 'Completed', cell: (a) => iso(a.completed_at) },
        { label: 'Error', cell: (a) => (a.error ? JSON.stringify(a.error) : '') },
      ], attempts),
      table('Executions', [
        { label: 'Execution', class: 'mono', cell: (e) => e.id },
        { label: 'Status', cell: (e) => h('span', { class: `badge ${e.status}` }, e.status) },
        { label: 'Started', cell: (e) => iso(e.created_at) }, { label: 'Completed', cell: (e) => iso(e.completed_at) },
        { label: 'Output', cell: (e) => h('button', { type: 'button', class: 'link', dataset: { execution: e.id },
          onclick: () => this.output.open(s.id, e) }, e.status === 'running' ? 'Watch live' : 'Show') },
      ], executions, 'No executions.'),
      table('Provider observations', [
        { label: 'Observed', cell: (o) => iso(o.observed_at) }, { label: 'Status', cell: (o) => o.status },
        { label: 'Resource', class: 'mono', cell: (o) => o.provider_resource_id || '–' },
        { label: 'Cost', cell: (o) => usd(o.provider_cost_usd) }, { label: 'Missing', cell: (o) => (o.missing ? 'yes' : 'no') },
      ], observations, 'No observations.'));
  }

  confirm(s) {
    this.pendingVersion = s.version;
    this.dialogText.textContent = `Terminate ${s.id} (${s.backend}, version ${s.version})? Its processes end and it cannot be resumed.`;
    this.dialog.showModal();
  }

  async terminate() {
    this.dialog.close();
    const id = this.id;
    try {
      await this.app.client.request('DELETE', `/v1/sandboxes/${encodeURIComponent(id)}`,
        { headers: { 'If-Match': ifMatch(this.pendingVersion) } });
      this.app.flash(`Terminated ${id}.`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 409) {
        this.app.flash(`Not terminated: the sandbox changed since it was shown (409: ${err.message}). `
          + 'It has been refreshed; check it and confirm again.', true);
      } else {
        this.app.flash(`Not terminated: ${err.message}`, true);
      }
    }
    await this.app.refresh(true);
  }
}

function facts(pairs) {
  return h('dl', { class: 'facts' }, pairs.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

/** Live output of one execution, with its signal control. */
class OutputPanel {
  constructor(app) {
    this.app = app;
    this.watcher = null;
    this.title = h('h3', { id: 'output-title' });
    this.state = h('span', { class: 'muted', id: 'output-state', 'aria-live': 'polite' });
    this.pre = h('pre', { class: 'output', id: 'output', tabindex: '0', 'aria-labelledby': 'output-title' });
    this.signal = h('select', { id: 'signal-name', 'aria-label': 'Signal' },
      ['TERM', 'INT', 'KILL'].map((s) => h('option', { value: s }, s)));
    this.send = h('button', { type: 'button', id: 'signal-send', onclick: () => this.sendSignal() }, 'Send signal');
    this.controls = h('span', { class: 'controls' }, this.signal, this.send);
    this.root = h('section', { class: 'panel wide', id: 'output-panel', hidden: true },
      h('div', { class: 'detail-head' }, this.title, this.state, this.controls,
        h('button', { type: 'button', onclick: () => this.close() }, 'Close output')), this.pre);
  }

  open(sandboxId, execution) {
    this.close();
    this.sandboxId = sandboxId;
    this.executionId = execution.id;
    this.root.hidden = false;
    this.title.textContent = `Output of ${execution.id}`;
    this.root.scrollIntoView({ block: 'nearest' });
    const scopes = this.app.caps.scopes;
    this.controls.hidden = !scopes.some((s) => s === '*' || s === 'sandboxes:execute' || s === 'sandboxes:write');
    this.send.disabled = false;
    fill(this.pre);
    const path = `/v1/sandboxes/${encodeURIComponent(sandboxId)}/executions/${encodeURIComponent(execution.id)}/stream`;
    this.watcher = this.app.client.watch(path, {
      onChunk: (c) => this.pre.append(h('span', { class: c.stream }, c.text)),
      onExit: (exit) => {
        this.send.disabled = true;
        this.pre.append(h('span', { class: 'notice' }, `\n[${exit.status}, exit code ${exit.exit_code ?? '–'}]\n`));
      },
      onState: (s) => {
        this.state.textContent = s;
      },
    });
  }

  async sendSignal() {
    try {
      await this.app.client.request('POST', `/v1/sandboxes/${encodeURIComponent(this.sandboxId)}/executions/`
        + `${encodeURIComponent(this.executionId)}/signal`, { body: { signal: this.signal.value } });
      this.app.flash(`Sent ${this.signal.value} to ${this.executionId}.`);
    } catch (err) {
      this.app.flash(`Signal not sent: ${err.message}`, true);
    }
  }

  close() {
    if (this.watcher) this.watcher.close();
    this.watcher = null;
    this.root.hidden = true;
  }
}
