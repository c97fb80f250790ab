// The gateway's REST API as the dashboard uses it. Session mode: the HttpOnly cookie authenticates and every
// state-changing request carries the session's CSRF token. Local mode (/dashboard/local): the key stays in
// this tab's sessionStorage and goes out as a Bearer header.
import { SseParser, OutputLog } from './lib.js';

const KEY = 'bespoke.dashboard.key';

export class ApiError extends Error {
  constructor(status, detail) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
    this.status = status;
    this.detail = detail;
  }

  static async from(res) {
    let detail = res.statusText;
    try {
      const body = await res.json();
      detail = body.detail ?? detail;
    } catch {
      // not JSON
    }
    return new ApiError(res.status, detail);
  }
}

export class Client {
  constructor(mode) {
    this.mode = mode;
    this.csrf = null;
  }

  headers(method, extra = {}) {
    const h = { ...extra };
    if (this.mode === 'local') {
      const key = sessionStorage.getItem(KEY);
      if (key) h.Authorization = `Bearer ${key}`;
    } else if (method !== 'GET' && method !== 'HEAD' && this.csrf) {
      h['X-CSRF-Token'] = this.csrf;
    }
    return h;
  }

  async fetch(method, path, { body, headers } = {}) {
    const h = this.headers(method, headers);
    if (body !== undefined) h['Content-Type'] = 'application/json';
    return fetch(path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin', cache: 'no-store' });
  }

  /** JSON answer, or throws ApiError with the contract's detail. */
  async request(method, path, options = {}) {
    const res = await this.fetch(method, path, options);
    if (!res.ok) throw await ApiError.from(res);
    return res.status === 204 ? null : res.json();
  }

  get(path) {
    return this.request('GET', path);
  }

  /** One page of a list paged by X-Next-Cursor: {items, next} (next is null on the last page). */
  async page(path) {
    const res = await this.fetch('GET', path);
    if (!res.ok) throw await ApiError.from(res);
    return { items: await res.json(), next: res.headers.get('X-Next-Cursor') || null };
  }

  /** The caller's capabilities; remembers the CSRF token of a session. */
  async session() {
    const s = await this.get('/v1/session');
    if (s.csrf_token) this.csrf = s.csrf_token;
    return s;
  }

  async login(apiKey) {
    if (this.mode === 'local') {
      sessionStorage.setItem(KEY, apiKey);
    } else {
      const r = await this.request('POST', '/v1/dashboard/session', { body: { api_key: apiKey } });
      this.csrf = r.csrf_token;
    }
    return this.session();
  }

  async logout() {
    if (this.mode === 'local') {
      sessionStorage.removeItem(KEY);
    } else {
      await this.request('DELETE', '/v1/dashboard/session');
    }
    this.csrf = null;
  }

  /** Downloads a CSV export with this client's credentials. */
  async download(path, filename) {
    const res = await this.fetch('GET', path);
    if (!res.ok) throw await ApiError.from(res);
    const url = URL.createObjectURL(await res.blob());
    const a = document.createElement('a');
    a.href = url;
    a.download = filename;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  /**
   * Reads an SSE stream until done() or close(), reconnecting after a drop with Last-Event-ID = lastId().
   * A 4xx answer ends it (onState reports the error).
   */
  stream(path, { lastId, onEvent, onState, done = () => false }) {
    let closed = false;
    let controller = null;
    const run = async () => {
      while (!closed && !done()) {
        controller = new AbortController();
        try {
          const last = lastId();
          const headers = { Accept: 'text/event-stream', ...(last ? { 'Last-Event-ID': last } : {}) };
          const res = await fetch(path, { headers: this.headers('GET', headers), credentials: 'same-origin',
            cache: 'no-store', signal: controller.signal });
          if (!res.ok) {
            const err = await ApiError.from(res);
            onState(`error: ${err.message}`);
            if (res.status < 500) return;
          } else {
            onState('live');
            const parser = new SseParser(onEvent);
            const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
            for (;;) {
              const { value, done: ended } = await reader.read();
              if (ended) break;
              parser.feed(value);
            }
          }
        } catch (e) {
          if (closed) return;
        }
        if (closed || done()) break;
        onState('reconnecting');
        await new Promise((r) => setTimeout(r, 1000));
      }
    };
    run();
    return {
      close() {
        closed = true;
        if (controller) controller.abort();
      },
    };
  }

  /**
   * Watches an execution's output. A dropped connection is resumed after the last chunk; the OutputLog drops
   * chunks already seen, so nothing is lost or repeated. Ends at the exit event or close().
   */
  watch(path, { onChunk, onExit, onState }) {
    const log = new OutputLog();
    const s = this.stream(path, {
      lastId: () => (log.lastSeq > 0 ? String(log.lastSeq) : null),
      done: () => log.exit !== null,
      onState,
      onEvent: (ev) => {
        const chunk = log.add(ev);
        if (chunk) onChunk(chunk);
        if (ev.event === 'exit' && log.exit) {
          onState('ended');
          onExit(log.exit);
        }
      },
    });
    return { log, close: () => s.close() };
  }

  /** Follows the organization's sandbox lifecycle changes (GET /v1/sandbox-events), resuming after a drop. */
  follow(onChange, onState = () => {}) {
    let last = null;
    return this.stream('/v1/sandbox-events', {
      lastId: () => last,
      onState,
      onEvent: (ev) => {
        if (ev.event !== 'lifecycle') return;
        if (ev.id) last = ev.id;
        try {
          onChange(JSON.parse(ev.data));
        } catch {
          // not JSON: skipped
        }
      },
    });
  }
}
