/**
 * Training curves from the diagnosis's `metrics` (loss, grad norm, loss scale, learning
 * rate against step, per rank), shaped for a chart: one chart per metric name, x = the union
 * of steps, one line per rank where ranks differ (ranks whose points are identical share
 * one line), non-finite values ("nan", "inf", "-inf") as gaps listed separately so they can
 * be marked. Pure: used by the webview bundle (`webview/charts.ts`) and by unit tests.
 */
import type { MetricOnset, MetricSeries } from './diagnosis';

/** One line of a chart: `values[i]` belongs to `ChartData.steps[i]`; null = no point there. */
export interface ChartLine {
  label: string;
  ranks: Array<number | null>;
  values: Array<number | null>;
}

/** One chart. */
export interface ChartData {
  name: string;
  /** Sorted, distinct steps. */
  steps: number[];
  lines: ChartLine[];
  /** Steps where some line had a non-finite value (NaN/inf), with the ranks. */
  nonFinite: Array<{ step: number; rank: number | null; value: string }>;
  onsets: MetricOnset[];
}

const ORDER = [
  'loss',
  'lm loss',
  'grad_norm',
  'grad norm',
  'loss_scale',
  'loss scale',
  'lr',
  'learning_rate',
  'learning rate',
];

function finite(v: number | string): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/** The charts for `metrics`, loss first, then grad norm, loss scale, learning rate, then others by name. */
export function chartData(metrics: MetricSeries[] | undefined): ChartData[] {
  const byName = new Map<string, MetricSeries[]>();
  for (const s of metrics ?? []) {
    if (!s || typeof s.name !== 'string' || !Array.isArray(s.points) || !s.points.length) {
      continue;
    }
    const list = byName.get(s.name) ?? [];
    list.push(s);
    byName.set(s.name, list);
  }
  const rankOf = (name: string) => {
    const i = ORDER.indexOf(name.toLowerCase());
    return i < 0 ? ORDER.length : i;
  };
  const names = [...byName.keys()].sort((a, b) => rankOf(a) - rankOf(b) || a.localeCompare(b));
  return names.map((name) => {
    const series = [...byName.get(name)!].sort((a, b) => (a.rank ?? -1) - (b.rank ?? -1));
    const steps = [...new Set(series.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
    const index = new Map(steps.map((s, i) => [s, i]));
    const lines: ChartLine[] = [];
    const nonFinite: ChartData['nonFinite'] = [];
    for (const s of series) {
      const values: Array<number | null> = new Array(steps.length).fill(null);
      for (const [step, v] of s.points) {
        values[index.get(step)!] = finite(v);
        if (finite(v) === null) {
          nonFinite.push({ step, rank: s.rank, value: String(v) });
        }
      }
      const same = lines.find((l) => l.values.length === values.length && l.values.every((x, i) => x === values[i]));
      if (same) {
        same.ranks.push(s.rank);
      } else {
        lines.push({ label: '', ranks: [s.rank], values });
      }
    }
    for (const l of lines) {
      const ranks = l.ranks.filter((r): r is number => typeof r === 'number');
      l.label =
        lines.length === 1
          ? ranks.length > 1
            ? 'all ranks'
            : ranks.length
              ? `rank ${ranks[0]}`
              : name
          : ranks.length
            ? `rank${ranks.length > 1 ? 's' : ''} ${ranks.join(', ')}`
            : name;
    }
    const onsets = series.flatMap((s) => s.onsets ?? []);
    return { name, steps, lines, nonFinite, onsets };
  });
}
