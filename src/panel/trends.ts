import { call } from './api.js';
import { formatNumber } from './dom.js';

// Trends: the last hour of every analog and 1-Wire value. The daemon keeps
// one sample per step (GET /trends); the page starts from those and adds the
// values the live feed brings, at most one point per SPACING_MS per value, so
// a chart is full when the page opens and moves with every reading. Charts are
// plain SVG polylines: a small one on the card, a bigger one on click.

const HOUR_MS = 3_600_000;
/** Live values closer than this replace the last point instead of adding one. */
const SPACING_MS = 2000;
const SVG = 'http://www.w3.org/2000/svg';

interface Series {
  t: number[];
  v: Array<number | null>;
}

const store = new Map<string, Series>();
/** Called when a series gained points from /trends (the cards redraw). */
let onLoaded: ((key: string) => void) | undefined;

export function seriesKey(dev: string, circuit: string, field: string): string {
  return `${dev}/${circuit}/${field}`;
}

/** Fetches the daemon's last hour once; points already added live stay after it. */
export async function loadTrends(redraw: (key: string) => void): Promise<void> {
  onLoaded = redraw;
  const reply = (await call('GET', '/trends')) as
    | { step_s: number; series: Array<{ dev: string; circuit: string; field: string; start: number; values: Array<number | null> }> }
    | undefined;
  if (!reply || !Array.isArray(reply.series)) return;
  for (const one of reply.series) {
    const key = seriesKey(one.dev, one.circuit, one.field);
    const live = store.get(key);
    const t = one.values.map((_, i) => (one.start + i * reply.step_s) * 1000);
    const series: Series = { t, v: [...one.values] };
    // Live points newer than the daemon's last sample stay.
    if (live) {
      const last = t[t.length - 1] ?? 0;
      live.t.forEach((time, i) => {
        if (time > last) {
          series.t.push(time);
          series.v.push(live.v[i]!);
        }
      });
    }
    store.set(key, series);
    onLoaded?.(key);
  }
}

/** A reading from the live feed (or a listing). */
export function addPoint(key: string, value: unknown, now = Date.now()): void {
  const v = typeof value === 'number' && Number.isFinite(value) ? value : null;
  let series = store.get(key);
  if (!series) store.set(key, (series = { t: [], v: [] }));
  const last = series.t.length - 1;
  if (last >= 0 && now - series.t[last]! < SPACING_MS) {
    series.v[last] = v;
    return;
  }
  series.t.push(now);
  series.v.push(v);
  // Trim in batches, so a long-open page keeps an hour and no more.
  if (series.t[0]! < now - HOUR_MS * 1.1) {
    const keep = series.t.findIndex((time) => time >= now - HOUR_MS);
    series.t.splice(0, keep);
    series.v.splice(0, keep);
  }
}

/** Lowest and highest value of the last hour, or undefined without one. */
export function extent(key: string, now = Date.now()): [number, number] | undefined {
  const series = store.get(key);
  if (!series) return undefined;
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < series.t.length; i++) {
    const v = series.v[i];
    if (v === null || v === undefined || series.t[i]! < now - HOUR_MS) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return lo <= hi ? [lo, hi] : undefined;
}

export function svgElement<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, String(value));
  return element;
}

export interface ChartBox {
  width: number;
  height: number;
  /** Room for axis labels: left and bottom, in the same units. */
  left?: number;
  bottom?: number;
}

/**
 * Draws the last hour of a series into `svg`: one polyline per unbroken run
 * of values (a gap where nothing was read). The y range is the hour's own,
 * widened a little so a flat line sits in the middle.
 */
export function drawChart(svg: SVGSVGElement, key: string, box: ChartBox, axes = false, now = Date.now()): void {
  const { width, height, left = 0, bottom = 0 } = box;
  const series = store.get(key);
  const range = extent(key, now);
  const lines: SVGElement[] = [];
  if (series && range) {
    let [lo, hi] = range;
    const pad = Math.max((hi - lo) * 0.08, Math.abs(hi) * 0.001, 0.01);
    lo -= pad;
    hi += pad;
    const plotW = width - left;
    const plotH = height - bottom;
    const x = (t: number) => left + ((t - (now - HOUR_MS)) / HOUR_MS) * plotW;
    const y = (v: number) => (1 - (v - lo) / (hi - lo)) * plotH;
    let run: string[] = [];
    const flush = () => {
      if (run.length === 1) run.push(run[0]!.replace(/^([\d.]+)/, (m) => String(Number(m) + 1)));
      if (run.length > 1) lines.push(svgElement('polyline', { points: run.join(' '), class: 'line' }));
      run = [];
    };
    for (let i = 0; i < series.t.length; i++) {
      const v = series.v[i];
      const t = series.t[i]!;
      if (t < now - HOUR_MS) continue;
      if (v === null || v === undefined) {
        flush();
        continue;
      }
      run.push(`${x(t).toFixed(1)},${y(v).toFixed(1)}`);
    }
    flush();
    if (axes) {
      const label = (text: string, lx: number, ly: number, anchor: string) =>
        lines.push(Object.assign(svgElement('text', { x: lx, y: ly, 'text-anchor': anchor, class: 'axis' }), { textContent: text }));
      label(formatNumber(Number(range[1].toPrecision(4))), left - 6, 12, 'end');
      label(formatNumber(Number(range[0].toPrecision(4))), left - 6, plotH - 2, 'end');
      for (const [minutes, anchor] of [[60, 'start'], [30, 'middle'], [0, 'end']] as const) {
        label(minutes === 0 ? 'now' : `−${minutes} min`, x(now - minutes * 60_000), height - 4, anchor);
      }
      lines.push(svgElement('line', { x1: left, y1: plotH, x2: width, y2: plotH, class: 'grid-line' }));
      lines.push(svgElement('line', { x1: left, y1: 0, x2: left, y2: plotH, class: 'grid-line' }));
    }
  }
  svg.replaceChildren(...lines);
}
