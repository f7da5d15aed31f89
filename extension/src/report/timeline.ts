/**
 * The rank timeline of the report: one row per rank, one mark per finding at its time
 * (or at its order in the log when the log has no timestamps), the initiating event
 * highlighted and collateral marks dimmed. `layoutTimeline` computes positions in SVG user
 * units (pixels at 100% zoom); `renderTimelineSvg` draws them. Pure: no `vscode` import.
 */
import type { Diagnosis, Evidence, TimelineEvent } from './diagnosis';
import { escapeHtml } from './escape';

/** How a mark is drawn. */
export type MarkKind = 'initiating' | 'cause' | 'collateral' | 'other';

/** One event placed on the timeline. */
export interface TimelineMark {
  /** Centre, in SVG units. */
  x: number;
  y: number;
  kind: MarkKind;
  rank: number | null;
  signature: string;
  title: string;
  /** Seconds since the epoch, or null. */
  time: number | null;
  /** 0-based position in the log order used when there are no timestamps. */
  order: number;
  /** Where the event's first line is (1-based line), when known. */
  path?: string;
  line?: number;
  text?: string;
  /** The tooltip (plain text). */
  label: string;
}

/** One row: a rank (or `null` for lines that name no rank). */
export interface TimelineRow {
  rank: number | null;
  label: string;
  host: string | null;
  /** Row centre, SVG units. */
  y: number;
}

/** A labelled tick on the x axis. */
export interface TimelineTick {
  x: number;
  label: string;
}

/** The computed picture. */
export interface TimelineLayout {
  width: number;
  height: number;
  /** `time`: x is proportional to seconds; `order`: marks are evenly spaced in log order. */
  mode: 'time' | 'order';
  rows: TimelineRow[];
  marks: TimelineMark[];
  ticks: TimelineTick[];
  /** Left edge and right edge of the plotting area. */
  plotLeft: number;
  plotRight: number;
}

/** Geometry options (SVG units). */
export interface TimelineOptions {
  width?: number;
  rowHeight?: number;
  labelWidth?: number;
  /** Rows above this number are folded into the layout anyway; the SVG scrolls. */
  maxRows?: number;
}

interface NormalEvent {
  rank: number | null;
  host: string | null;
  time: number | null;
  order: number;
  signature: string;
  title: string;
  role: string;
  path?: string;
  line?: number;
  text?: string;
  flaggedInitiating?: boolean;
  flaggedCollateral?: boolean;
}

function firstEvidence(evidence: Evidence[] | undefined): Evidence | undefined {
  return evidence && evidence.length ? evidence[0] : undefined;
}

/**
 * The events to draw: the engine's `timeline` when it carries per-event rank/time/order,
 * else one event per finding; sorted by order of first occurrence in the logs.
 */
export function timelineEvents(d: Diagnosis): NormalEvent[] {
  const fromTimeline = (d.timeline ?? []).filter(
    (e: TimelineEvent) => e && (typeof e.signature === 'string' || typeof e.title === 'string'),
  );
  let events: NormalEvent[];
  if (fromTimeline.length) {
    events = fromTimeline.map((e, index) => ({
      rank: typeof e.rank === 'number' ? e.rank : null,
      host: typeof e.host === 'string' ? e.host : null,
      time: typeof e.time === 'number' ? e.time : null,
      order: typeof e.order === 'number' ? e.order : index,
      signature: String(e.signature ?? ''),
      title: String(e.title ?? e.signature ?? ''),
      role: String(e.role ?? e.kind ?? ''),
      path: typeof e.path === 'string' ? e.path : undefined,
      line: typeof e.line === 'number' ? e.line : undefined,
      text: typeof e.text === 'string' ? e.text : undefined,
      flaggedInitiating: e.initiating === true || e.kind === 'root',
      flaggedCollateral: e.collateral === true || e.kind === 'collateral',
    }));
  } else {
    events = (d.findings ?? []).map((f, index) => {
      const ev = firstEvidence(f.evidence);
      return {
        rank: f.rank,
        host: f.host,
        time: f.time,
        order: typeof f.order === 'number' ? f.order : index,
        signature: f.signature,
        title: f.title,
        role: f.role,
        path: ev?.path,
        line: ev?.line,
        text: ev?.text,
      };
    });
    if (events.some((e) => e.order === undefined)) {
      events.forEach((e, i) => (e.order = i));
    }
  }
  // The engine's order is the order of first occurrence across all sources; time only
  // breaks ties (positions in time mode come from the times themselves).
  return events.sort(
    (a, b) => a.order - b.order || (a.time ?? Infinity) - (b.time ?? Infinity) || (a.line ?? 0) - (b.line ?? 0),
  );
}

function classify(e: NormalEvent, d: Diagnosis, collateral: Set<string>): MarkKind {
  const cause = d.root_cause;
  if (e.flaggedInitiating) {
    return 'initiating';
  }
  if (cause && e.signature === cause.signature) {
    const rank = d.initiating_rank ?? cause.rank;
    if (rank === null || rank === undefined || e.rank === rank) {
      return 'initiating';
    }
    return 'cause';
  }
  if (e.flaggedCollateral || collateral.has(e.signature)) {
    return 'collateral';
  }
  return 'other';
}

function formatSeconds(seconds: number): string {
  if (seconds < 1) {
    return `+${Math.round(seconds * 1000)} ms`;
  }
  if (seconds < 120) {
    return `+${Number(seconds.toFixed(seconds < 10 ? 1 : 0))} s`;
  }
  if (seconds < 7200) {
    return `+${Number((seconds / 60).toFixed(1))} min`;
  }
  return `+${Number((seconds / 3600).toFixed(1))} h`;
}

/** Clock time of `epochSeconds` in UTC, `HH:MM:SS` (logs' timestamps carry no zone we trust). */
export function clock(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toISOString().slice(11, 19);
}

/**
 * Place the events. Rows are the ranks seen (from `ranks.seen` and the events), sorted,
 * then one row "no rank" when some event names no rank. Time mode is used when every
 * event has a time and at least two distinct times exist; otherwise order mode.
 */
export function layoutTimeline(d: Diagnosis, options: TimelineOptions = {}): TimelineLayout {
  const width = options.width ?? 760;
  const rowHeight = options.rowHeight ?? 24;
  const labelWidth = options.labelWidth ?? 96;
  const top = 8;
  const axisHeight = 26;
  // Marks are inset from the plot's ends so the initiating ring (r = 8) never touches a label.
  const plotLeft = labelWidth + 22;
  const plotRight = width - 16;
  const events = timelineEvents(d);
  const collateral = new Set((d.collateral ?? []).map((c) => c.signature));

  const rankSet = new Set<number>();
  for (const r of d.ranks?.seen ?? []) {
    if (typeof r === 'number') {
      rankSet.add(r);
    }
  }
  let rankless = false;
  for (const e of events) {
    if (e.rank === null) {
      rankless = true;
    } else {
      rankSet.add(e.rank);
    }
  }
  const hosts = d.ranks?.hosts ?? {};
  const hostOf = (rank: number): string | null => {
    const fromEvents = events.find((e) => e.rank === rank && e.host)?.host;
    return hosts[String(rank)] ?? fromEvents ?? null;
  };
  const rows: TimelineRow[] = [...rankSet]
    .sort((a, b) => a - b)
    .slice(0, options.maxRows ?? 512)
    .map((rank) => ({ rank, label: `rank ${rank}`, host: hostOf(rank), y: 0 }));
  if (rankless) {
    rows.push({ rank: null, label: 'no rank', host: null, y: 0 });
  }
  rows.forEach((row, i) => (row.y = top + rowHeight * i + rowHeight / 2));
  const rowY = new Map(rows.map((r) => [r.rank, r.y]));
  const height = top + rowHeight * Math.max(rows.length, 1) + axisHeight;

  const times = events.map((e) => e.time);
  const timed = times.length > 0 && times.every((t) => typeof t === 'number');
  const tMin = timed ? Math.min(...(times as number[])) : 0;
  const tMax = timed ? Math.max(...(times as number[])) : 0;
  const mode: 'time' | 'order' = timed && tMax > tMin ? 'time' : 'order';
  const span = plotRight - plotLeft;

  const marks: TimelineMark[] = events
    .filter((e) => rowY.has(e.rank))
    .map((e, index) => {
      const x =
        mode === 'time'
          ? plotLeft + ((e.time! - tMin) / (tMax - tMin)) * span
          : events.length === 1
            ? plotLeft + span / 2
            : plotLeft + (index / (events.length - 1)) * span;
      const kind = classify(e, d, collateral);
      const where = e.path && e.line ? ` — ${e.path.split(/[\\/]/).pop()}:${e.line}` : '';
      const when = e.time !== null ? `${clock(e.time)} ` : '';
      const role = kind === 'initiating' ? ' [initiating]' : kind === 'collateral' ? ' [collateral]' : '';
      return {
        x: Math.round(x * 10) / 10,
        y: rowY.get(e.rank)!,
        kind,
        rank: e.rank,
        signature: e.signature,
        title: e.title,
        time: e.time,
        order: index,
        path: e.path,
        line: e.line,
        text: e.text,
        label: `${when}${e.rank === null ? '' : `rank ${e.rank}: `}${e.title}${role}${where}`,
      };
    });

  const ticks: TimelineTick[] = [];
  if (mode === 'time') {
    const count = 4;
    for (let i = 0; i <= count; i++) {
      const t = tMin + ((tMax - tMin) * i) / count;
      ticks.push({
        x: Math.round((plotLeft + (span * i) / count) * 10) / 10,
        label: i === 0 ? clock(t) : formatSeconds(t - tMin),
      });
    }
  } else if (marks.length) {
    ticks.push({ x: plotLeft, label: 'first in log' });
    if (marks.length > 1) {
      ticks.push({ x: plotRight, label: 'last' });
    }
  }
  return { width, height, mode, rows, marks, ticks, plotLeft, plotRight };
}

/**
 * Draw a layout as an accessible SVG string: `role="img"` with a summary label, a
 * `<title>` per mark for hover, marks focusable (`tabindex="0"`) with `data-path` and
 * `data-line` so the webview script can open the log line on click or Enter. Colours come
 * from CSS classes (`tl-*`) styled with VS Code theme variables.
 */
export function renderTimelineSvg(layout: TimelineLayout): string {
  const { width, height, rows, marks, ticks, plotLeft, plotRight, mode } = layout;
  const out: string[] = [];
  const initiating = marks.find((m) => m.kind === 'initiating');
  const summary =
    `Rank timeline, ${rows.length} rows, ${marks.length} events, ` +
    (mode === 'time' ? 'positioned by time' : 'positioned by order in the log') +
    (initiating ? `; initiating event: ${initiating.label}` : '');
  out.push(
    `<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
      `viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeHtml(summary)}">`,
  );
  for (const row of rows) {
    const hostLabel = row.host ? ` ${row.host}` : '';
    out.push(
      `<g class="tl-row"><line class="tl-lane" x1="${plotLeft - 12}" x2="${plotRight + 12}" y1="${row.y}" y2="${row.y}"/>` +
        `<text class="tl-label" x="${plotLeft - 18}" y="${row.y + 4}" text-anchor="end">${escapeHtml(row.label)}` +
        (hostLabel ? `<title>${escapeHtml(row.label + ' on' + hostLabel)}</title>` : '') +
        `</text></g>`,
    );
  }
  const axisY = height - 18;
  out.push(`<line class="tl-axis" x1="${plotLeft}" x2="${plotRight}" y1="${axisY}" y2="${axisY}"/>`);
  for (const tick of ticks) {
    const anchor = tick.x <= plotLeft + 1 ? 'start' : tick.x >= plotRight - 1 ? 'end' : 'middle';
    out.push(
      `<line class="tl-axis" x1="${tick.x}" x2="${tick.x}" y1="${axisY}" y2="${axisY + 4}"/>` +
        `<text class="tl-tick" x="${tick.x}" y="${axisY + 15}" text-anchor="${anchor}">${escapeHtml(tick.label)}</text>`,
    );
  }
  // Draw the initiating mark last so nothing covers it.
  const ordered = [...marks].sort((a, b) => Number(a.kind === 'initiating') - Number(b.kind === 'initiating'));
  for (const m of ordered) {
    const data =
      (m.path ? ` data-path="${escapeHtml(m.path)}"` : '') + (m.line ? ` data-line="${m.line}"` : '');
    const shape =
      m.kind === 'initiating'
        ? `<circle cx="${m.x}" cy="${m.y}" r="8" class="tl-ring"/><circle cx="${m.x}" cy="${m.y}" r="5"/>`
        : m.kind === 'collateral'
          ? `<rect x="${m.x - 4}" y="${m.y - 4}" width="8" height="8" rx="1"/>`
          : `<circle cx="${m.x}" cy="${m.y}" r="5"/>`;
    out.push(
      `<g class="tl-mark tl-${m.kind}" tabindex="0" role="button" aria-label="${escapeHtml(m.label)}"${data}>` +
        `<title>${escapeHtml(m.label)}</title>${shape}</g>`,
    );
  }
  out.push('</svg>');
  return out.join('');
}
