// The dashboard's entry point: sign-in, the views (each shown only when the key's scopes allow it), automatic
// refresh while the tab is visible (paused while it is hidden, caught up when it is shown again), and a manual
// refresh.
import { Client, ApiError } from './api.js';
import { fill } from './dom.js';
import { Overview } from './overview.js';
import { Sandboxes } from './sandboxes.js';
import { Detail } from './detail.js';
import { Activity } from './activity.js';
import { Costs } from './costs.js';

const REFRESH_MS = 5000;
const $ = (id) => document.getElementById(id);

class App {
  constructor() {
    this.mode = document.body.dataset.auth === 'local' ? 'local' : 'session';
    this.client = new Client(this.mode);
    this.caps = null;
    this.sandboxes = [];
    this.follower = null;
    this.soonTimer = null;
    this.view = 'overview';
    this.timer = null;
    this.refreshedAt = 0;
    this.stale = false;
    this.busy = 0;
    this.overview = new Overview(this, $('view-overview'));
    this.list = new Sandboxes(this, $('view-sandboxes'));
    this.detail = new Detail(this, $('view-detail'));
    this.activity = new Activity(this, $('view-activity'));
    this.costs = new Costs(this, $('view-costs'));
  }

  async start() {
    $('login-form').addEventListener('submit', (e) => this.login(e));
    $('refresh').addEventListener('click', () => this.refresh(true));
    $('logout').addEventListener('click', () => this.logout());
    for (const tab of document.querySelectorAll('[role=tab]')) {
      tab.addEventListener('click', () => this.show(tab.dataset.view));
      tab.addEventListener('keydown', (e) => this.tabKey(e, tab));
    }
    document.addEventListener('visibilitychange', () => this.visibility());
    $('login-note').textContent = this.mode === 'local'
      ? 'Local mode: the key stays in this tab (sessionStorage) and is sent as a Bearer header.'
      : 'The key is exchanged for a session cookie; it is not stored in the browser.';
    try {
      await this.signedIn(await this.client.session());
    } catch (e) {
      this.signedOut();
    }
  }

  async login(e) {
    e.preventDefault();
    const input = $('api-key');
    $('login-error').textContent = '';
    try {
      const caps = await this.client.login(input.value.trim());
      input.value = '';
      await this.signedIn(caps);
    } catch (err) {
      if (this.mode === 'local') await this.client.logout();
      $('login-error').textContent = err instanceof ApiError ? err.message : 'Sign-in failed.';
    }
  }

  async logout() {
    try {
      await this.client.logout();
    } catch (err) {
      this.flash(`Sign-out failed: ${err.message}`, true);
      return;
    }
    this.signedOut();
  }

  signedOut() {
    this.caps = null;
    if (this.follower) this.follower.close();
    this.follower = null;
    clearTimeout(this.timer);
    this.detail.close();
    $('app').hidden = true;
    $('login').hidden = false;
    $('refresh').hidden = true;
    $('logout').hidden = true;
    fill($('who'));
    $('who').hidden = true;
    $('api-key').focus();
  }

  async signedIn(caps) {
    this.caps = caps;
    $('login').hidden = true;
    $('app').hidden = false;
    $('refresh').hidden = false;
    $('logout').hidden = false;
    $('who').hidden = false;
    fill($('who'), `${caps.role} · ${caps.auth_mode === 'session' ? 'session' : 'API key'}`);
    document.querySelector('[data-view=activity]').hidden = !(caps.can_view_alerts || caps.can_view_audit || caps.can_export);
    document.querySelector('[data-view=costs]').hidden = !caps.can_view_usage;
    if (document.querySelector(`[data-view=${this.view}]`).hidden) this.view = 'overview';
    this.show(this.view);
    if (this.readsSandboxes()) {
      // lifecycle changes are pushed: the feed shows each, and the views refresh soon after
      this.follower = this.client.follow((change) => {
        this.overview.feed(change);
        clearTimeout(this.soonTimer);
        if (document.visibilityState === 'visible') this.soonTimer = setTimeout(() => this.refresh(false), 300);
        else this.stale = true; // refreshed when the tab is shown again
      });
    }
    await this.refresh(true);
  }

  readsSandboxes() {
    return this.caps.scopes.some((s) => s === '*' || s === 'sandboxes:read');
  }

  can(flag) {
    return Boolean(this.caps && this.caps[flag]);
  }

  tabKey(e, tab) {
    const tabs = [...document.querySelectorAll('[role=tab]')].filter((t) => !t.hidden);
    const i = tabs.indexOf(tab);
    let next = null;
    if (e.key === 'ArrowRight') next = tabs[(i + 1) % tabs.length];
    if (e.key === 'ArrowLeft') next = tabs[(i - 1 + tabs.length) % tabs.length];
    if (next) {
      e.preventDefault();
      next.focus();
      this.show(next.dataset.view);
    }
  }

  show(view) {
    this.view = view;
    for (const tab of document.querySelectorAll('[role=tab]')) {
      const on = tab.dataset.view === view;
      tab.setAttribute('aria-selected', String(on));
      tab.tabIndex = on ? 0 : -1;
      $(`view-${tab.dataset.view}`).hidden = !on;
    }
    if (view !== 'sandboxes') this.detail.close();
    this.refreshView(true);
  }

  /** Opens a sandbox's detail under the list. */
  open(id) {
    if (this.view !== 'sandboxes') this.show('sandboxes');
    this.detail.open(id);
  }

  /** Hidden: nothing is refreshed on its own. Shown again: at once if a refresh was due (or a change pushed). */
  visibility() {
    clearTimeout(this.timer);
    clearTimeout(this.soonTimer);
    if (!this.caps || document.visibilityState !== 'visible') return;
    if (this.stale || Date.now() - this.refreshedAt >= REFRESH_MS) this.refresh(false);
    else this.schedule(REFRESH_MS - (Date.now() - this.refreshedAt));
  }

  schedule(delay = REFRESH_MS) {
    clearTimeout(this.timer);
    if (this.caps && document.visibilityState === 'visible') {
      this.timer = setTimeout(() => this.refresh(false), delay);
    }
  }

  async refresh(manual) {
    clearTimeout(this.timer);
    this.stale = false;
    this.busy += 1;
    $('app').setAttribute('aria-busy', 'true');
    try {
      await this.refreshView(manual);
      this.refreshedAt = Date.now();
      $('updated').textContent = `Updated ${new Date(this.refreshedAt).toLocaleTimeString()}`;
    } catch (err) {
      this.failed(err, 'Refresh failed');
    } finally {
      this.busy -= 1;
      if (this.busy === 0) $('app').removeAttribute('aria-busy');
    }
    this.schedule();
  }

  /** A failed request: a 401 (the session ended) signs out, anything else is shown. */
  failed(err, what = 'Failed') {
    if (err instanceof ApiError && err.status === 401) {
      this.signedOut();
      return;
    }
    this.flash(`${what}: ${err.message}`, true);
  }

  async refreshView(manual) {
    if (!this.caps) return;
    const views = { overview: this.overview, sandboxes: this.list, activity: this.activity, costs: this.costs };
    await views[this.view].render(manual);
    if (this.view === 'sandboxes') await this.detail.refresh();
  }

  flash(text, error = false) {
    const el = $('flash');
    el.textContent = text;
    el.classList.toggle('error', error);
  }
}

new App().start();
