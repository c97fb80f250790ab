// The dashboard's pure helpers (gateway/src/main/resources/dashboard/assets/lib.js), with Node's test runner.
// lib.js is a browser module with no imports of its own: it is loaded as a data: URL so that no package.json
// is needed to make Node read it as a module.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

const source = readFileSync(new URL('../../main/resources/dashboard/assets/lib.js', import.meta.url), 'utf8');
const lib = await import('data:text/javascript;base64,' + Buffer.from(source).toString('base64'));

const sbx = (id, status, backend, created, extra = {}) => ({ id, status, backend, created_at: created, ...extra });

test('asks the server for a filtered page: status, backend and an inclusive UTC day range', () => {
  assert.equal(lib.sandboxQuery({}, 10), '/v1/sandboxes?limit=10');
  assert.equal(lib.sandboxQuery({}, 10, 'abc'), '/v1/sandboxes?limit=10&cursor=abc');
  assert.equal(lib.sandboxQuery({ status: 'running', backend: 'local' }, 10, 'abc'),
    '/v1/sandboxes?limit=10&status=running&backend=local&cursor=abc');
  const q = new URL(lib.sandboxQuery({ from: '2026-02-28', to: '2026-03-01' }, 10), 'http://x').searchParams;
  assert.equal(q.get('created_after'), '2026-02-28T00:00:00Z');
  assert.equal(q.get('created_before'), '2026-03-02T00:00:00Z');
  assert.equal(new URL(lib.sandboxQuery({ to: '2026-12-31' }, 10), 'http://x').searchParams.get('created_before'),
    '2027-01-01T00:00:00Z');
  assert.equal(lib.sandboxQuery({ from: '2026-03-02', to: '2026-03-01' }, 10), null);
});

test('pages a cursor-paged list: back and forth over the cursors seen, the total once the end is seen', () => {
  const pager = new lib.CursorPager(10);
  assert.equal(pager.cursor(), '');
  assert.deepEqual(pager.loaded(10, 'c2'), { page: 1, hasPrev: false, hasNext: true, from: 1, to: 10, total: null,
    label: 'Page 1' });
  pager.move(1);
  assert.equal(pager.cursor(), 'c2');
  assert.deepEqual(pager.loaded(3, ''), { page: 2, hasPrev: true, hasNext: false, from: 11, to: 13, total: 13,
    label: 'Page 2 of 2' });
  pager.move(1); // there is no third page
  assert.equal(pager.page, 2);
  pager.move(-1);
  assert.equal(pager.cursor(), '');
  // a refresh of the first page finds more sandboxes than before: the second page's cursor is the new one
  assert.equal(pager.loaded(10, 'c2b').hasNext, true);
  pager.move(1);
  assert.equal(pager.cursor(), 'c2b');
  assert.equal(pager.loaded(0, null).total, 10);
  pager.reset();
  assert.deepEqual(pager.loaded(0, null), { page: 1, hasPrev: false, hasNext: false, from: 0, to: 0, total: 0,
    label: 'Page 1 of 1' });
});

test('formats money and durations', () => {
  assert.equal(lib.usd('1.5'), '$1.50');
  assert.equal(lib.usd('0.0012'), '$0.0012');
  assert.equal(lib.usd('-2'), '-$2.00');
  assert.equal(lib.usd(null), '–');
  assert.equal(lib.duration(59), '59s');
  assert.equal(lib.duration(61), '1m 1s');
  assert.equal(lib.duration(3 * 3600 + 120), '3h 2m');
  assert.equal(lib.duration(2 * 86400 + 3600), '2d 1h');
});

test('finds live sandboxes near their deadline', () => {
  const now = Date.parse('2026-03-02T10:00:00Z');
  const list = [
    sbx('soon', 'running', 'local', '2026-03-02T09:00:00Z', { expires_at: '2026-03-02T10:05:00Z' }),
    sbx('later', 'running', 'local', '2026-03-02T09:00:00Z', { expires_at: '2026-03-02T12:00:00Z' }),
    sbx('ended', 'destroyed', 'local', '2026-03-02T09:00:00Z', { expires_at: '2026-03-02T10:01:00Z' }),
    sbx('none', 'running', 'local', '2026-03-02T09:00:00Z'),
  ];
  assert.deepEqual(lib.nearingTtl(list, now, 900).map((s) => s.id), ['soon']);
  assert.equal(lib.ttlLeft(list[0], now), 300);
});

test('parses Server-Sent Events split anywhere, ignoring comments', () => {
  const events = [];
  const p = new lib.SseParser((e) => events.push(e));
  const stream = ': keep-alive\n\nid: 1\nevent: stdout\ndata: {"data":"a\\n"}\n\nid: 2\r\nevent: stderr\r\ndata: {"data":"b"}\r\n\r\n'
    + 'event: exit\ndata: {"status":"completed","exit_code":0}\n\n';
  for (let i = 0; i < stream.length; i += 3) p.feed(stream.slice(i, i + 3));
  assert.deepEqual(events, [
    { id: '1', event: 'stdout', data: '{"data":"a\\n"}' },
    { id: '2', event: 'stderr', data: '{"data":"b"}' },
    { id: null, event: 'exit', data: '{"status":"completed","exit_code":0}' },
  ]);
});

test('an output log over a resumed stream neither loses nor repeats chunks', () => {
  const log = new lib.OutputLog();
  const ev = (seq, stream, data) => ({ id: String(seq), event: stream, data: JSON.stringify({ data }) });
  assert.ok(log.add(ev(1, 'stdout', 'one\n')));
  assert.ok(log.add(ev(2, 'stdout', 'two\n')));
  // the connection drops; the resumed stream (Last-Event-ID: 2) may repeat what the server had in flight
  assert.equal(log.add(ev(2, 'stdout', 'two\n')), null);
  assert.ok(log.add(ev(3, 'stderr', 'three\n')));
  assert.ok(log.add({ id: '4', event: 'stdout', data: JSON.stringify({ data_b64: Buffer.from('vier ✓\n').toString('base64') }) }));
  log.add({ id: null, event: 'exit', data: '{"status":"completed","exit_code":0}' });
  assert.equal(log.text(), 'one\ntwo\nthree\nvier ✓\n');
  assert.equal(log.text('stderr'), 'three\n');
  assert.equal(log.lastSeq, 4);
  assert.equal(log.exit.status, 'completed');
});

test('cost matrix by day and backend, and its stacked bars', () => {
  const days = lib.lastDays(Date.parse('2026-03-02T15:00:00Z'), 3);
  assert.deepEqual(days.map((d) => d.day), ['2026-02-28', '2026-03-01', '2026-03-02']);
  assert.equal(days[2].start, '2026-03-02T00:00:00.000Z');
  assert.equal(days[2].end, '2026-03-03T00:00:00.000Z');
  const m = lib.costMatrix(days, [
    { items: [{ key: 'local', customer_cost_usd: '0' }] },
    { items: [{ key: 'e2b', customer_cost_usd: '1.5' }, { key: 'docker', customer_cost_usd: '0.5' }] },
    { items: [{ key: 'e2b', customer_cost_usd: '3' }] },
  ]);
  assert.deepEqual(m.backends, ['docker', 'e2b']);
  assert.deepEqual(m.rows[1].values, { e2b: 1.5, docker: 0.5 });
  const { rects, top } = lib.stackedBars(m, 300, 100);
  assert.equal(top, 5);
  assert.equal(rects.length, 3);
  const day2 = rects.filter((r) => r.day === '2026-03-01');
  assert.deepEqual(day2.map((r) => r.backend), ['docker', 'e2b']);
  assert.equal(day2[0].h, 10);
  assert.equal(day2[0].y, 90);
  assert.equal(day2[1].y, 60);
  assert.equal(lib.niceMax(0), 1);
  assert.equal(lib.niceMax(7), 10);
  assert.equal(lib.niceMax(0.03), 0.05);
});

test('usage ratios and the If-Match value', () => {
  assert.equal(lib.ratio(5, 10), 0.5);
  assert.equal(lib.ratio(15, '10'), 1);
  assert.equal(lib.ratio(1, null), null);
  assert.equal(lib.ratio(0, 0), 0);
  assert.equal(lib.ifMatch(7), '"7"');
});
