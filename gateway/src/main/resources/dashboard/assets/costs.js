// Customer cost per UTC day for the last 30 days, stacked by backend: an SVG drawn here (no third-party
// code), with the same numbers as a table for screen readers and keyboard users.
import { h, svg, fill, table } from './dom.js';
import { lastDays, costMatrix, stackedBars, usd } from './lib.js';

const W = 720, H = 240, LEFT = 60, BOTTOM = 24;

export class Costs {
  constructor(app, root) {
    this.app = app;
    this.loadedAt = 0;
    this.figure = h('figure', { class: 'plot', id: 'cost-plot' });
    this.tableBox = h('div', { class: 'table-box', id: 'cost-table' });
    fill(root, h('section', { class: 'panel wide' }, h('h2', {}, 'Customer cost per day, last 30 days'),
      this.figure, h('details', { open: true }, h('summary', {}, 'The numbers'), this.tableBox)));
  }

  async render(manual) {
    if (!manual && Date.now() - this.loadedAt < 60000) return; // thirty requests: not on every tick
    const days = lastDays(Date.now(), 30);
    const answers = await Promise.all(days.map((d) => this.app.client.get(
      `/v1/costs?group_by=backend&start=${encodeURIComponent(d.start)}&end=${encodeURIComponent(d.end)}`)));
    this.loadedAt = Date.now();
    const matrix = costMatrix(days, answers);
    this.draw(matrix);
    fill(this.tableBox, table('Customer cost by day and backend (USD)', [
      { label: 'Day', cell: (r) => r.day },
      ...matrix.backends.map((b) => ({ label: b, class: 'num', cell: (r) => usd(r.values[b] || 0) })),
      { label: 'Total', class: 'num', cell: (r) => usd(Object.values(r.values).reduce((a, v) => a + v, 0)) },
    ], matrix.rows));
  }

  draw(matrix) {
    const plotW = W - LEFT - 10, plotH = H - BOTTOM - 10;
    const { rects, top } = stackedBars(matrix, plotW, plotH);
    const color = new Map(matrix.backends.map((b, i) => [b, `series-${i % 8}`]));
    const axis = [0, 0.5, 1].map((f) => svg('g', {},
      svg('line', { x1: LEFT, x2: W - 10, y1: 10 + plotH * (1 - f), y2: 10 + plotH * (1 - f), class: 'grid-line' }),
      svg('text', { x: LEFT - 6, y: 14 + plotH * (1 - f), class: 'axis', 'text-anchor': 'end' }, usd(top * f))));
    const labels = matrix.rows.map((r, i) => (i % 5 === 0 || i === matrix.rows.length - 1
      ? svg('text', { x: LEFT + (i + 0.5) * (plotW / matrix.rows.length), y: H - 6, class: 'axis', 'text-anchor': 'middle' },
        r.day.slice(5)) : null)).filter(Boolean);
    const bars = rects.map((r) => svg('rect', { x: LEFT + r.x, y: 10 + r.y, width: r.w, height: Math.max(0.5, r.h),
      class: color.get(r.backend) }, svg('title', {}, `${r.day} ${r.backend}: ${usd(r.value)}`)));
    const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': 'cost-plot-title',
      class: 'chart' }, svg('title', { id: 'cost-plot-title' }, 'Customer cost per day, stacked by backend'),
    ...axis, ...bars, ...labels);
    const legend = h('ul', { class: 'legend' }, matrix.backends.length === 0
      ? h('li', { class: 'muted' }, 'No costs in the last 30 days.')
      : matrix.backends.map((b) => h('li', {}, h('span', { class: `swatch ${color.get(b)}`, 'aria-hidden': 'true' }), b)));
    fill(this.figure, chart, h('figcaption', {}, legend));
  }
}
