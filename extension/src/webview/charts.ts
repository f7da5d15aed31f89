/**
 * The report's training curves, drawn in the webview with uPlot (bundled by esbuild into
 * dist/webview/charts.js; nothing is fetched at run time). Reads the page's
 * `<script type="application/json" id="metrics-data">`, draws one chart per
 * `figure.chart[data-metric]`, marks each onset with a dashed vertical line at its step and
 * resizes with the column. Colours come from the VS Code theme's CSS variables.
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { MetricSeries } from '../report/diagnosis';
import { chartData } from '../report/curves';

function themeColor(name: string, fallback: string): string {
  const v = getComputedStyle(document.body).getPropertyValue(name).trim();
  return v || fallback;
}

function draw(): void {
  const data = document.getElementById('metrics-data');
  if (!data) {
    return;
  }
  const metrics = JSON.parse(data.textContent || '[]') as MetricSeries[];
  const palette = [
    '--vscode-charts-blue',
    '--vscode-charts-orange',
    '--vscode-charts-green',
    '--vscode-charts-purple',
    '--vscode-charts-yellow',
    '--vscode-charts-red',
  ];
  const fg = themeColor('--vscode-descriptionForeground', '#888');
  const grid = themeColor('--vscode-widget-border', 'rgba(128,128,128,0.25)');
  const onsetColor = themeColor('--vscode-errorForeground', '#f14c4c');
  const plots: Array<{ plot: uPlot; body: HTMLElement }> = [];
  for (const chart of chartData(metrics)) {
    const figure = document.querySelector<HTMLElement>(`figure.chart[data-metric="${CSS.escape(chart.name)}"]`);
    const body = figure?.querySelector<HTMLElement>('.chart-body');
    if (!body) {
      continue;
    }
    const onsetSteps = [...new Set(chart.onsets.map((o) => o.step).concat(chart.nonFinite.map((n) => n.step)))];
    const opts: uPlot.Options = {
      width: Math.max(200, body.clientWidth),
      height: 160,
      legend: { show: chart.lines.length > 1 },
      cursor: { points: { size: 6 } },
      scales: { x: { time: false } },
      axes: [
        { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, label: 'step', labelSize: 16 },
        { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, size: 56 },
      ],
      series: [
        { label: 'step' },
        ...chart.lines.map((l, i) => ({
          label: l.label,
          stroke: themeColor(palette[i % palette.length], '#3794ff'),
          width: 1.5,
          spanGaps: false,
          points: { show: chart.steps.length <= 60 },
        })),
      ],
      hooks: {
        draw: [
          (u: uPlot) => {
            const ctx = u.ctx;
            ctx.save();
            ctx.strokeStyle = onsetColor;
            ctx.lineWidth = 1.5 * devicePixelRatio;
            ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
            for (const step of onsetSteps) {
              const x = Math.round(u.valToPos(step, 'x', true));
              ctx.beginPath();
              ctx.moveTo(x, u.bbox.top);
              ctx.lineTo(x, u.bbox.top + u.bbox.height);
              ctx.stroke();
            }
            ctx.restore();
          },
        ],
      },
    };
    const aligned: uPlot.AlignedData = [chart.steps, ...chart.lines.map((l) => l.values)];
    plots.push({ plot: new uPlot(opts, aligned, body), body });
    body.setAttribute('role', 'img');
    body.setAttribute(
      'aria-label',
      `${chart.name} against step, ${chart.lines.map((l) => l.label).join('; ')}` +
        (onsetSteps.length ? `; onset at step ${onsetSteps.join(', ')}` : ''),
    );
  }
  const resize = new ResizeObserver(() => {
    for (const { plot, body } of plots) {
      plot.setSize({ width: Math.max(200, body.clientWidth), height: 160 });
    }
  });
  plots.forEach(({ body }) => resize.observe(body));
}

draw();
