// Pure helpers of the dashboard: no DOM, no network, so Node's test runner checks them (src/test/js).

export const ENDED = new Set(['destroyed', 'failed']);

/** "$1.23" from a decimal string or number; "–" for none. */
export function usd(value) {
  if (value === null || value === undefined || value === '') return '–';
  const n = Number(value);
  if (!Number.isFinite(n)) return '–';
  const digits = Math.abs(n) > 0 && Math.abs(n) < 0.01 ? 4 : 2;
  return (n < 0 ? '-$' : '$') + Math.abs(n).toFixed(digits);
}

/** "3d 4h", "2h 5m", "4m 10s", "12s" from seconds. */
export function duration(secs) {
  if (secs === null || secs === undefined || !Number.isFinite(secs)) return '–';
  const s = Math.max(0, Math.floor(secs));
  const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${s % 60}s`;
  return `${s}s`;
}

/** Seconds from an ISO timestamp to now (ms). */
export function ageSecs(iso, nowMs) {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : (nowMs - t) / 1000;
}

/** Seconds left before a live sandbox's deadline, or null (no deadline, or ended). */
export function ttlLeft(sbx, nowMs) {
  if (!sbx.expires_at || ENDED.has(sbx.status)) return null;
  return (Date.parse(sbx.expires_at) - nowMs) / 1000;
}

/** Live sandboxes whose deadline is within windowSecs. */
export function nearingTtl(list, nowMs, windowSecs = 900) {
  return list.filter((s) => {
    const left = ttlLeft(s, nowMs);
    return left !== null && left <= windowSecs;
  });
}

/**
 * The address of one page of the sandbox list (GET /v1/sandboxes) with the filters: status, backend, and a
 * creation day range (YYYY-MM-DD, inclusive, UTC) sent as created_after (the first day's start) and
 * created_before (the start of the day after the last). Null when the last day is before the first: nothing
 * can match.
 */
export function sandboxQuery({ status = '', backend = '', from = '', to = '' } = {}, size, cursor = '') {
  if (from && to && from > to) return null;
  const q = new URLSearchParams({ limit: String(size) });
  if (status) q.set('status', status);
  if (backend) q.set('backend', backend);
  if (from) q.set('created_after', `${from}T00:00:00Z`);
  if (to) q.set('created_before', new Date(Date.parse(`${to}T00:00:00Z`) + 86400000).toISOString().replace('.000Z', 'Z'));
  if (cursor) q.set('cursor', cursor);
  return `/v1/sandboxes?${q}`;
}

/**
 * Pages of a list the server pages with cursors (the sandbox list: newest first, `limit` and `X-Next-Cursor`):
 * the cursor of every page reached so far, so Previous and Next move between them. The total is known once
 * the last page has been seen.
 */
export class CursorPager {
  constructor(size) {
    this.size = size;
    this.reset();
  }

  reset() {
    this.page = 1;
    this.cursors = [''];
  }

  /** The cursor that fetches the current page ('' for the first). */
  cursor() {
    return this.cursors[this.page - 1];
  }

  /** Moves to an adjacent page already reached (or the one after the last page loaded, if it has a cursor). */
  move(delta) {
    const p = this.page + delta;
    if (p >= 1 && p <= this.cursors.length) this.page = p;
  }

  /**
   * Records the current page's answer (its row count and next cursor: null or '' on the last page) and
   * describes it: {page, hasPrev, hasNext, from, to, total (null while unknown), label}.
   */
  loaded(rows, next) {
    this.cursors.length = this.page;
    if (next) this.cursors.push(next);
    const first = (this.page - 1) * this.size;
    const total = next ? null : first + rows;
    const out = { page: this.page, hasPrev: this.page > 1, hasNext: Boolean(next), from: rows ? first + 1 : 0,
      to: first + rows, total };
    out.label = total === null ? `Page ${this.page}` : `Page ${this.page} of ${this.page}`;
    return out;
  }
}

/** Share of a limit used, 0..1 (null without a limit). */
export function ratio(used, limit) {
  if (limit === null || limit === undefined || limit === '') return null;
  const l = Number(limit), u = Number(used);
  if (!Number.isFinite(l) || l <= 0) return u > 0 ? 1 : 0;
  return Math.min(1, Math.max(0, u / l));
}

/** The last `count` UTC days ending today, oldest first, as {day, start, end} (ISO). */
export function lastDays(nowMs, count = 30) {
  const today = Date.UTC(new Date(nowMs).getUTCFullYear(), new Date(nowMs).getUTCMonth(), new Date(nowMs).getUTCDate());
  const out = [];
  for (let i = count - 1; i >= 0; i--) {
    const start = today - i * 86400000;
    out.push({ day: new Date(start).toISOString().slice(0, 10), start: new Date(start).toISOString(),
      end: new Date(start + 86400000).toISOString() });
  }
  return out;
}

/**
 * Rows {day, values: {backend: cost}} and the backends (sorted) from per-day answers of
 * GET /v1/costs?group_by=backend.
 */
export function costMatrix(days, answers) {
  const backends = new Set();
  const rows = days.map((d, i) => {
    const values = {};
    for (const item of (answers[i] && answers[i].items) || []) {
      const v = Number(item.customer_cost_usd);
      if (Number.isFinite(v) && v !== 0) {
        values[item.key] = (values[item.key] || 0) + v;
        backends.add(item.key);
      }
    }
    return { day: d.day, values };
  });
  return { rows, backends: [...backends].sort() };
}

/** A "nice" upper bound for an axis: 1, 2 or 5 times a power of ten, at least max. */
export function niceMax(max) {
  if (!(max > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(max)));
  for (const m of [1, 2, 5, 10]) {
    if (m * p >= max) return m * p;
  }
  return 10 * p;
}

/** Rectangles of a stacked bar chart in a width x height box: {x, y, w, h, backend, day, value}. */
export function stackedBars(matrix, width, height) {
  const totals = matrix.rows.map((r) => Object.values(r.values).reduce((a, b) => a + b, 0));
  const top = niceMax(Math.max(0, ...totals));
  const slot = width / Math.max(1, matrix.rows.length);
  const bar = Math.max(1, slot * 0.7);
  const rects = [];
  matrix.rows.forEach((r, i) => {
    let y = height;
    for (const b of matrix.backends) {
      const v = r.values[b] || 0;
      if (v <= 0) continue;
      const h = (v / top) * height;
      y -= h;
      rects.push({ x: i * slot + (slot - bar) / 2, y, w: bar, h, backend: b, day: r.day, value: v });
    }
  });
  return { rects, top };
}

/**
 * Server-Sent Events parser for a fetch body: feed it text chunks, it calls onEvent({id, event, data}) for
 * each complete event (comments ignored, lines may be split anywhere between chunks).
 */
export class SseParser {
  constructor(onEvent) {
    this.onEvent = onEvent;
    this.buffer = '';
    this.reset();
  }

  reset() {
    this.id = null;
    this.event = 'message';
    this.data = [];
  }

  feed(text) {
    this.buffer += text;
    let nl;
    while ((nl = this.buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = this.buffer.slice(0, nl);
      const sep = this.buffer.startsWith('\r\n', nl) ? 2 : 1;
      this.buffer = this.buffer.slice(nl + sep);
      this.line(line);
    }
  }

  line(line) {
    if (line === '') {
      if (this.data.length > 0) {
        this.onEvent({ id: this.id, event: this.event, data: this.data.join('\n') });
      }
      this.reset();
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id') this.id = value;
  }
}

/** Decodes an output event's payload: `data`, or `data_b64` (UTF-8). */
export function outputText(payload) {
  if (typeof payload.data === 'string') return payload.data;
  if (typeof payload.data_b64 === 'string') {
    const bin = atob(payload.data_b64);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return new TextDecoder().decode(bytes);
  }
  return '';
}

/**
 * The output of one execution as it arrives, in sequence order, over reconnects: an event whose sequence
 * number was already seen is dropped, so a resumed stream neither loses nor repeats chunks.
 */
export class OutputLog {
  constructor() {
    this.lastSeq = 0;
    this.chunks = [];
    this.exit = null;
  }

  /** Adds a parsed SSE event; returns the chunk added ({stream, text, seq}) or null. */
  add(ev) {
    let payload;
    try {
      payload = JSON.parse(ev.data);
    } catch {
      return null;
    }
    if (ev.event === 'exit') {
      this.exit = payload;
      return null;
    }
    const seq = Number(ev.id);
    if (ev.id !== null && Number.isFinite(seq)) {
      if (seq <= this.lastSeq) return null;
      this.lastSeq = seq;
    }
    if (ev.event === 'stdout' || ev.event === 'stderr') {
      const chunk = { stream: ev.event, text: outputText(payload), seq };
      this.chunks.push(chunk);
      return chunk;
    }
    if (ev.event === 'gap') {
      const chunk = { stream: 'notice', text: `[${payload.bytes ?? 'some'} bytes of output were lost]\n`, seq };
      this.chunks.push(chunk);
      return chunk;
    }
    return null;
  }

  text(stream) {
    return this.chunks.filter((c) => !stream || c.stream === stream).map((c) => c.text).join('');
  }
}

/** The header value of an If-Match for a version. */
export function ifMatch(version) {
  return `"${version}"`;
}
