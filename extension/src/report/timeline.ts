/**
 * The rank timeline of the report: one row per rank, one mark per event at its time (or at
 * its order in the log when the log has no timestamps). Responsive HTML, not a fixed-size
 * picture: `layoutTimeline` places marks in percent of the lane's width (0..100), so the
 * chart fits any column (no horizontal scroll); `renderTimelineHtml` writes rows as a CSS
 * grid with focusable mark buttons whose details (time, rank, title, role, file:line) are
 * real HTML shown on hover and keyboard focus. The initiating mark is always on the row of
 * the rank the headline names, and that row is emphasised. Pure: no `vscode` import.
 */
import type { Diagnosis, Evidence, TimelineEvent } from './diagnosis';
import { escapeHtml as esc } from './escape';

/** How a mark is drawn. */
export type MarkKind = 'initiating' | 'cause' | 'collateral' | 'other';

/** One event placed on the timeline. */
export interface TimelineMark {
  /** Position along the lane, percent of its width (0..100). */
  x: number;
  /** Index of its row in `rows`. */
  row: number;
  kind: MarkKind;
  rank: number | null;
  signature: string;
  title: string;
  /** Seconds since the epoch, or null. */
  time: number | null;
  /** 0-based position in the log order. */
  order: number;
  /** Where the event's first line is (1-based line), when known. */
  path?: string;
  line?: number;
  text?: string;
  /** One line of plain text: time, rank, title, role, location. */
  label: string;
}

/** One row: a rank (or `null` for lines that name no rank). */
export interface TimelineRow {
  rank: number | null;
  label: string;
  host: string | null;
  /** The rank the diagnosis names as initiating. */
  initiating: boolean;
}

/** A labelled tick on the x axis, `x` in percent. */
export interface TimelineTick {
  x: number;
  label: string;
}

/** The computed picture. */
export interface TimelineLayout {
  /**
   * `time`: x proportional to seconds; `spread`: events in time order with the gaps between
   * distinct times evened out (used when events cluster, so each stays apart; ticks keep
   * the real times); `order`: evenly spaced in log order (not every event has a time).
   */
  mode: 'time' | 'spread' | 'order';
  rows: TimelineRow[];
  marks: TimelineMark[];
  ticks: TimelineTick[];
}

/** Layout options. */
export interface TimelineOptions {
  /** Most rows drawn (the rest are summarised). Default 64. */
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
      host: null,
      time: typeof e.time === 'number' ? e.time : null,
      order: typeof e.order === 'number' ? e.order : index,
      signature: String(e.signature ?? ''),
      title: String(e.title ?? e.signature ?? ''),
      role: String(e.kind ?? ''),
      path: typeof e.path === 'string' ? e.path : undefined,
      line: typeof e.line === 'number' ? e.line : undefined,
      text: undefined,
      flaggedInitiating: e.kind === 'root',
      flaggedCollateral: e.kind === 'collateral',
    }));
  } else {
    events = (d.findings ?? []).map((f, index) => {
      const ev = firstEvidence(f.evidence);
      return {
        rank: f.rank,
        host: f.host,
        time: f.time,
        order: index,
        signature: f.signature,
        title: f.title,
        role: f.role,
        path: ev?.path,
        line: ev?.line,
        text: ev?.text,
      };
    });
  }
  return events.sort(
    (a, b) => a.order - b.order || (a.time ?? Infinity) - (b.time ?? Infinity) || (a.line ?? 0) - (b.line ?? 0),
  );
}

/**
 * The rank the diagnosis names (`initiating_rank`), or null. The root cause's own rank is not
 * used when the engine names none: that rank only reported the failure (victims only, or
 * conflicting evidence).
 */
export function namedRank(d: Diagnosis): number | null {
  const r = d.initiating_rank;
  return typeof r === 'number' ? r : null;
}

/**
 * Which event is the initiating mark: on the named rank's row, the first root-cause event
 * there (a root event that names no rank is counted on the named rank: the diagnosis
 * attributes it); with no named rank, the first root-cause event. -1 when none.
 */
function initiatingIndex(events: NormalEvent[], d: Diagnosis, named: number | null): number {
  const cause = d.root_cause;
  if (!cause) {
    return -1;
  }
  const isCause = (e: NormalEvent) => e.flaggedInitiating || e.signature === cause.signature;
  if (named === null) {
    // No rank named: the first root-cause event initiates only when it names no rank either
    // (a single process); a ranked one is a victim's report, not the start of the failure.
    return events.findIndex((e) => e.rank === null && isCause(e));
  }
  const onRow = events.findIndex((e) => e.rank === named && isCause(e));
  if (onRow >= 0) {
    return onRow;
  }
  return events.findIndex((e) => e.rank === null && isCause(e));
}

function classify(e: NormalEvent, d: Diagnosis, collateral: Set<string>): MarkKind {
  const cause = d.root_cause;
  if (cause && (e.signature === cause.signature || e.flaggedInitiating)) {
    return 'cause';
  }
  if (e.flaggedCollateral || collateral.has(e.signature)) {
    return 'collateral';
  }
  return 'other';
}

/** `+250 ms`, `+4.2 s`, `+12 s`, `+3.5 min`, `+1.2 h`. */
export function formatSeconds(seconds: number): string {
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
 * Whether marks placed proportionally to time would bunch: more than half of the gaps
 * between consecutive distinct times are under 3% of the span (they would overlap at any
 * column width).
 */
export function clustered(times: number[]): boolean {
  const distinct = [...new Set(times)].sort((a, b) => a - b);
  if (distinct.length < 3) {
    return false;
  }
  const span = distinct[distinct.length - 1] - distinct[0];
  let small = 0;
  for (let i = 1; i < distinct.length; i++) {
    if (distinct[i] - distinct[i - 1] < span * 0.03) {
      small++;
    }
  }
  return small > (distinct.length - 1) / 2;
}

const round = (x: number): number => Math.round(x * 100) / 100;

/**
 * Place the events. Rows are the ranks seen (from `ranks.seen`, the events and the named
 * rank), sorted, then one row "no rank" when an event that is not the initiating one names
 * no rank. Time mode when every event has a time and at least two distinct times exist
 * (`spread` when they cluster); otherwise order mode. Marks stay within 2..98% so a mark at
 * either end is whole.
 */
export function layoutTimeline(d: Diagnosis, options: TimelineOptions = {}): TimelineLayout {
  const events = timelineEvents(d);
  const collateral = new Set((d.collateral ?? []).map((c) => c.signature));
  const named = namedRank(d);
  const initiating = initiatingIndex(events, d, named);
  // The event the diagnosis attributes to the named rank is drawn on that rank's row.
  const rankOf = (e: NormalEvent, i: number): number | null => (i === initiating && named !== null ? named : e.rank);

  const rankSet = new Set<number>();
  for (const r of d.ranks?.seen ?? []) {
    if (typeof r === 'number') {
      rankSet.add(r);
    }
  }
  if (named !== null) {
    rankSet.add(named);
  }
  let rankless = false;
  events.forEach((e, i) => {
    const r = rankOf(e, i);
    if (r === null) {
      rankless = true;
    } else {
      rankSet.add(r);
    }
  });
  const hosts = d.ranks?.hosts ?? {};
  const hostOf = (rank: number): string | null => {
    const fromEvents = events.find((e) => e.rank === rank && e.host)?.host;
    return hosts[String(rank)] ?? fromEvents ?? (rank === named ? d.initiating_host : null) ?? null;
  };
  const rows: TimelineRow[] = [...rankSet]
    .sort((a, b) => a - b)
    .slice(0, options.maxRows ?? 64)
    .map((rank) => ({ rank, label: `rank ${rank}`, host: hostOf(rank), initiating: rank === named }));
  if (named !== null && !rows.some((r) => r.rank === named)) {
    rows.push({ rank: named, label: `rank ${named}`, host: hostOf(named), initiating: true });
  }
  if (rankless) {
    rows.push({ rank: null, label: 'no rank', host: null, initiating: false });
  }
  const rowIndex = new Map(rows.map((r, i) => [r.rank, i]));

  const placed = events.map((e, i) => ({ e, i, rank: rankOf(e, i) })).filter((p) => rowIndex.has(p.rank));
  const times = placed.map((p) => p.e.time);
  const timed = times.length > 0 && times.every((t) => typeof t === 'number');
  const tMin = timed ? Math.min(...(times as number[])) : 0;
  const tMax = timed ? Math.max(...(times as number[])) : 0;
  const mode: TimelineLayout['mode'] =
    timed && tMax > tMin ? (clustered(times as number[]) ? 'spread' : 'time') : 'order';
  const lo = 2;
  const hi = 98;
  const distinct = timed ? [...new Set(times as number[])].sort((a, b) => a - b) : [];
  const xOfTime = (t: number): number =>
    mode === 'time'
      ? lo + ((t - tMin) / (tMax - tMin)) * (hi - lo)
      : lo + (distinct.indexOf(t) / Math.max(1, distinct.length - 1)) * (hi - lo);

  const marks: TimelineMark[] = placed.map(({ e, i, rank }, index) => {
    const x =
      mode !== 'order' ? xOfTime(e.time!) : placed.length === 1 ? 50 : lo + (index / (placed.length - 1)) * (hi - lo);
    const kind: MarkKind = i === initiating ? 'initiating' : classify(e, d, collateral);
    const where = e.path && e.line ? ` — ${e.path.split(/[\\/]/).pop()}:${e.line}` : '';
    const when = e.time !== null ? `${clock(e.time)} ` : '';
    const role =
      kind === 'initiating'
        ? ' [initiating]'
        : kind === 'collateral'
          ? ' [collateral]'
          : kind === 'cause'
            ? ' [same error, another rank]'
            : '';
    return {
      x: round(x),
      row: rowIndex.get(rank)!,
      kind,
      rank,
      signature: e.signature,
      title: e.title,
      time: e.time,
      order: index,
      path: e.path,
      line: e.line,
      text: e.text,
      label: `${when}${rank === null ? '' : `rank ${rank}: `}${e.title}${role}${where}`,
    };
  });

  const ticks: TimelineTick[] = [];
  if (mode === 'time') {
    const count = 4;
    for (let i = 0; i <= count; i++) {
      const t = tMin + ((tMax - tMin) * i) / count;
      ticks.push({ x: round(lo + ((hi - lo) * i) / count), label: i === 0 ? clock(t) : formatSeconds(t - tMin) });
    }
  } else if (mode === 'spread') {
    // At most five ticks, at distinct times, evenly chosen, each labelled with its real time.
    const count = Math.min(5, distinct.length);
    const picked = [
      ...new Set(
        Array.from({ length: count }, (_, i) => Math.round((i * (distinct.length - 1)) / Math.max(1, count - 1))),
      ),
    ];
    for (const k of picked) {
      const t = distinct[k];
      ticks.push({ x: round(xOfTime(t)), label: k === 0 ? clock(t) : formatSeconds(t - tMin) });
    }
  } else if (marks.length) {
    ticks.push({ x: lo, label: 'first in log' });
    if (marks.length > 1) {
      ticks.push({ x: hi, label: 'last' });
    }
  }
  return { mode, rows, marks, ticks };
}

/** Where a file:line link of a mark should read (the panel maps selections to file lines). */
export type LocationLabel = (path: string, line: number) => string;

const defaultLocation: LocationLabel = (p, line) => `${p.split(/[\\/]/).pop()}:${line}`;

function tip(m: TimelineMark, id: string, location: LocationLabel): string {
  const role =
    m.kind === 'initiating'
      ? 'Initiating event'
      : m.kind === 'collateral'
        ? 'Collateral'
        : m.kind === 'cause'
          ? 'Same error on another rank'
          : 'Also seen';
  const side = m.x > 60 ? 'tl-tip-end' : 'tl-tip-start';
  return (
    `<div class="tl-tip ${side}" role="tooltip" id="${id}" data-x="${m.x}">` +
    `<div class="tl-tip-title">${esc(m.title)}</div>` +
    `<div>${esc(role)}${m.rank !== null ? ` · rank ${m.rank}` : ''}${m.time !== null ? ` · ${clock(m.time)} UTC` : ''}</div>` +
    (m.path && m.line ? `<div class="muted">${esc(location(m.path, m.line))}</div>` : '') +
    (m.text
      ? `<code class="tl-tip-text">${esc(m.text.length > 160 ? m.text.slice(0, 159) + '…' : m.text)}</code>`
      : '') +
    `</div>`
  );
}

/**
 * The timeline as responsive HTML: a `div.tl` grid of rows (label | lane), each lane's
 * `div.tl-track` inset by half a mark so marks at either end stay inside it, each mark a
 * `<button>` with `data-x` (percent; `media/report.js` sets `left` from it, since the CSP
 * forbids inline styles), `data-path`/`data-line` to open its line, `aria-describedby` its
 * HTML tooltip. The initiating rank's row has class `tl-row-initiating`.
 *
 * @param location how a mark's `path:line` reads (default: `basename:line`).
 */
export function renderTimelineHtml(layout: TimelineLayout, location: LocationLabel = defaultLocation): string {
  const { rows, marks, ticks, mode } = layout;
  const initiating = marks.find((m) => m.kind === 'initiating');
  const summary =
    `Rank timeline, ${rows.length} ${rows.length === 1 ? 'row' : 'rows'}, ${marks.length} ${marks.length === 1 ? 'event' : 'events'}, ` +
    (mode === 'order' ? 'in log order' : mode === 'spread' ? 'in time order' : 'positioned by time') +
    (initiating ? `; initiating event: ${initiating.label}` : '');
  const out: string[] = [`<div class="tl tl-${mode}" role="group" aria-label="${esc(summary)}">`];
  let tipId = 0;
  rows.forEach((row, index) => {
    const rowMarks = marks
      .filter((m) => m.row === index)
      // The initiating mark last, so nothing covers it.
      .sort((a, b) => Number(a.kind === 'initiating') - Number(b.kind === 'initiating'));
    out.push(
      `<div class="tl-row${row.initiating ? ' tl-row-initiating' : ''}" data-rank="${row.rank === null ? '' : row.rank}">` +
        `<div class="tl-label"><span class="tl-rank">${esc(row.label)}</span>` +
        (row.host ? `<span class="tl-host">${esc(row.host)}</span>` : '') +
        (row.initiating ? `<span class="tl-flag">initiating</span>` : '') +
        `</div><div class="tl-lane"><div class="tl-track">`,
    );
    for (const m of rowMarks) {
      const id = `tltip${++tipId}`;
      const data = (m.path ? ` data-path="${esc(m.path)}"` : '') + (m.line ? ` data-line="${m.line}"` : '');
      out.push(
        `<button type="button" class="tl-mark tl-${m.kind}" data-x="${m.x}"${data} aria-label="${esc(m.label)}" aria-describedby="${id}">` +
          `<span class="tl-shape" aria-hidden="true"></span></button>` +
          tip(m, id, location),
      );
    }
    out.push(`</div></div></div>`);
  });
  out.push(`<div class="tl-row tl-axis-row"><div class="tl-label"></div><div class="tl-axis"><div class="tl-track">`);
  ticks.forEach((t, i) => {
    const align =
      i === 0 && ticks.length > 1
        ? 'tl-tick-start'
        : i === ticks.length - 1 && ticks.length > 1
          ? 'tl-tick-end'
          : 'tl-tick-mid';
    out.push(`<span class="tl-tick ${align}" data-x="${t.x}">${esc(t.label)}</span>`);
  });
  out.push(`</div></div></div></div>`);
  return out.join('');
}
