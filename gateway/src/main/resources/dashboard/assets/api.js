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
   * Watches an execution's SSE stream. A dropped connection is resumed with Last-Event-ID after a pause;
   * the OutputLog drops chunks already seen, so nothing is lost or repeated. Calls onChunk(chunk) for each
   * new chunk and onState(text) as the connection changes; ends at the exit event or close().
   */
  watch(path, { onChunk, onExit, onState }) {
    const log = new OutputLog();
    let closed = false;
    let controller = null;
    const run = async () => {
      while (!closed && !log.exit) {
        controller = new AbortController();
        try {
          const headers = log.lastSeq > 0 ? { 'Last-Event-ID': String(log.lastSeq) } : {};
          const res = await fetch(path, { headers: this.headers('GET', { ...headers, Accept: 'text/event-stream' }),
            credentials: 'same-origin', cache: 'no-store', signal: controller.signal });
          if (!res.ok) {
            const err = await ApiError.from(res);
            onState(`error: ${err.message}`);
            if (res.status < 500) return;
          } else {
            onState('live');
            const parser = new SseParser((ev) => {
              const chunk = log.add(ev);
              if (chunk) onChunk(chunk);
            });
            const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
            for (;;) {
              const { value, done } = await reader.read();
              if (done) break;
              parser.feed(value);
            }
          }
        } catch (e) {
          if (closed) return;
          onState('reconnecting');
        }
        if (log.exit) break;
        if (!closed) await new Promise((r) => setTimeout(r, 1000));
      }
      if (log.exit) {
        onState('ended');
        onExit(log.exit);
      }
    };
    run();
    return {
      log,
      close() {
        closed = true;
        if (controller) controller.abort();
      },
    };
  }
}
