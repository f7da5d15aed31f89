/**
 * The report and entry pages of the webview, as HTML strings. Pure (no `vscode` import):
 * the panel passes in the URIs and the nonce. Everything from the diagnosis is escaped;
 * the page loads only `report.css` and `report.js` from the extension (strict CSP, no
 * inline style, no remote resource). Interactive elements carry `data-*` attributes that
 * `media/report.js` turns into messages: `open` (path, 1-based line), `copy`, `run`,
 * `entry` (signature id).
 */
import { unfilledPlaceholders } from '../placeholders';
import type { Collateral, Diagnosis, EventRef, Evidence, RelatedEntry, RootCause, UserFrame } from './diagnosis';
import { waitedFor } from './diagnosis';
import { escapeHtml as esc } from './escape';
import { LocationLabel, layoutTimeline, renderTimelineHtml } from './timeline';

/** What the page needs from its host. */
export interface PageContext {
  /** `webview.cspSource`. */
  cspSource: string;
  /** A fresh random nonce for the script tag. */
  nonce: string;
  /** `webview.asWebviewUri(...)` of `media/report.css` and `media/report.js`. */
  styleUri: string;
  scriptUri: string;
  /** The bundled charts script and style (`dist/webview/charts.js`/`.css`); no curves without them. */
  chartsScriptUri?: string;
  chartsStyleUri?: string;
  /** False in an untrusted workspace: Run buttons are disabled with a reason. */
  canRun: boolean;
  /**
   * How a report location reads, `file:line` (a selection's line 5 of `notes.md:7-12` is
   * `notes.md:11`). Default: the path's base name and the line.
   */
  location?: LocationLabel;
}

/** The Content-Security-Policy of every page (VS Code webview guide, "Content security policy"). */
export function contentSecurityPolicy(ctx: Pick<PageContext, 'cspSource' | 'nonce'>): string {
  return [
    "default-src 'none'",
    `img-src ${ctx.cspSource} data:`,
    `style-src ${ctx.cspSource}`,
    `font-src ${ctx.cspSource}`,
    `script-src 'nonce-${ctx.nonce}'`,
  ].join('; ');
}

function page(ctx: PageContext, title: string, body: string, charts = false): string {
  const withCharts = charts && ctx.chartsScriptUri;
  return (
    `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8">` +
    `<meta http-equiv="Content-Security-Policy" content="${esc(contentSecurityPolicy(ctx))}">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1.0">` +
    (withCharts && ctx.chartsStyleUri ? `<link rel="stylesheet" href="${esc(ctx.chartsStyleUri)}">` : '') +
    `<link rel="stylesheet" href="${esc(ctx.styleUri)}"><title>${esc(title)}</title></head>` +
    `<body>${body}<script nonce="${esc(ctx.nonce)}" src="${esc(ctx.scriptUri)}"></script>` +
    (withCharts ? `<script nonce="${esc(ctx.nonce)}" src="${esc(ctx.chartsScriptUri!)}"></script>` : '') +
    `</body></html>`
  );
}

function basename(path: string): string {
  return path.split(/[\\/]/).pop() || path;
}

const defaultLocation: LocationLabel = (p, line) => `${basename(p)}:${line}`;

/** `n word(s)` with the right plural. */
export function plural(n: number, word: string, many = `${word}s`): string {
  return `${n} ${n === 1 ? word : many}`;
}

/** A link to a log line (`file:line`), opened by the page script. */
function evidenceLink(e: Evidence, ctx: PageContext, label?: string): string {
  const text = label ?? (ctx.location ?? defaultLocation)(e.path, e.line);
  return `<a href="#" class="evidence-link" data-path="${esc(e.path)}" data-line="${e.line}" title="${esc(
    (ctx.location ?? defaultLocation)(e.path, e.line),
  )}">${esc(text)}</a>`;
}

function copyButton(targetId: string, what: string): string {
  return `<button class="copy" data-copy-target="${targetId}" aria-label="Copy ${esc(what)}">Copy</button>`;
}

function runButton(targetId: string, ctx: PageContext): string {
  return ctx.canRun
    ? `<button class="run" data-run-target="${targetId}">Run in Terminal</button>`
    : `<button class="run" disabled title="Disabled in an untrusted workspace">Run in Terminal</button>`;
}

function percent(confidence: number): string {
  return `${Math.round(Math.max(0, Math.min(1, confidence)) * 100)}%`;
}

const STACK_NAMES: Record<string, string> = {
  pytorch: 'PyTorch',
  hf: 'Hugging Face Trainer / Accelerate',
  deepspeed: 'DeepSpeed',
  megatron: 'Megatron-LM',
  vllm: 'vLLM',
};

/**
 * The stacks whose fix code opens by default: those the log shows (`d.stack`) that have
 * code, else `pytorch`, else the first one (as the CLI's text report chooses).
 */
export function detectedStacks(stack: string[] | undefined, code: Record<string, string>): string[] {
  const chosen = (stack ?? []).filter((s) => s in code);
  if (chosen.length) {
    return chosen;
  }
  if ('pytorch' in code) {
    return ['pytorch'];
  }
  const first = Object.keys(code)[0];
  return first ? [first] : [];
}

function fixSection(
  fix: { steps?: string[]; code?: Record<string, string> } | undefined,
  stack: string[] | undefined,
  ctx: PageContext,
  ids: { next: () => string },
): string {
  const steps = fix?.steps ?? [];
  const code = fix?.code ?? {};
  if (!steps.length && !Object.keys(code).length) {
    return '';
  }
  const parts = ['<section class="fix" aria-labelledby="h-fix"><h2 id="h-fix">Fix</h2>'];
  if (steps.length) {
    parts.push(`<ol>${steps.map((s) => `<li>${esc(s)}</li>`).join('')}</ol>`);
  }
  const open = detectedStacks(stack, code);
  const stacks = Object.keys(code).sort((a, b) => Number(open.includes(b)) - Number(open.includes(a)));
  for (const name of stacks) {
    const id = ids.next();
    const detected = open.includes(name);
    parts.push(
      `<details class="code-block"${detected ? ' open' : ''}><summary><span class="stack">${esc(STACK_NAMES[name] ?? name)}</span>` +
        (detected ? ` <span class="muted">(${stack?.includes(name) ? 'seen in the log' : 'default'})</span>` : '') +
        `</summary><div class="code-head">${copyButton(id, `${name} code`)}</div>` +
        `<pre><code id="${id}">${esc(code[name].replace(/\n$/, ''))}</code></pre></details>`,
    );
  }
  parts.push('</section>');
  return parts.join('');
}

function sameLine(a: Evidence, b: Evidence): boolean {
  return a.path === b.path && a.line === b.line;
}

/** How many of a collateral group's lines the table links (the count says how many there are). */
const MAX_COLLATERAL_LINKS = 6;

function collateralTable(rows: Collateral[], rootEvidence: Evidence[], ctx: PageContext): string {
  // A line that is the root cause's own evidence is never its collateral.
  const kept = rows
    .map((c) => ({ group: c, evidence: (c.evidence ?? []).filter((e) => !rootEvidence.some((r) => sameLine(r, e))) }))
    .filter(({ group, evidence }) => evidence.length > 0 || !(group.evidence ?? []).length)
    .map(({ group, evidence }) => ({ ...group, evidence }));
  if (!kept.length) {
    return '';
  }
  const body = kept
    .map((c) => {
      const first = c.evidence?.[0];
      const ranks = ranksLabel(c.ranks);
      const evidence = c.evidence ?? [];
      const shown = evidence.slice(0, MAX_COLLATERAL_LINKS);
      // the count is every line of the group; say how many the links leave out
      const more = Math.max(c.count, evidence.length) - shown.length;
      const lines =
        shown.map((e) => evidenceLink(e, ctx)).join(' ') +
        (more > 0 ? ` <span class="muted">+${more} more</span>` : '');
      return (
        `<tr><td>${first ? evidenceLink(first, ctx, c.title ?? c.signature) : esc(c.title ?? c.signature)}` +
        `<div class="muted">${esc(c.failure_class)}</div></td><td>${esc(ranks)}</td>` +
        `<td class="num">${c.count}</td><td class="lines">${lines}</td></tr>`
      );
    })
    .join('');
  return (
    `<section class="collateral" aria-labelledby="h-coll"><h2 id="h-coll">Collateral</h2>` +
    `<p class="muted">Failures the root cause explains: they happened because of it.</p>` +
    `<div class="table-wrap"><table><thead><tr><th scope="col">Kind</th><th scope="col">Ranks</th><th scope="col">Count</th>` +
    `<th scope="col">Lines</th></tr></thead><tbody>${body}</tbody></table></div></section>`
  );
}

/** "0-4, 6, 7" for a list of ranks (sorted; runs of three or more collapsed, as the engine writes them); "—" when empty. */
export function ranksLabel(ranks: Array<number | null> | undefined): string {
  const sorted = [...new Set((ranks ?? []).filter((r): r is number => typeof r === 'number'))].sort((a, b) => a - b);
  if (!sorted.length) {
    return '—';
  }
  const runs: string[] = [];
  let start = sorted[0];
  let prev = sorted[0];
  for (const r of [...sorted.slice(1), NaN]) {
    if (r === prev + 1) {
      prev = r;
      continue;
    }
    runs.push(start === prev ? `${start}` : prev === start + 1 ? `${start}, ${prev}` : `${start}-${prev}`);
    start = prev = r;
  }
  return runs.join(', ');
}

/**
 * The entry's references (the doc or issue that establishes it): each http(s) address is a
 * link the extension opens in the browser on a click (`data-url`, report.js posts it; nothing
 * is fetched by the page), anything else is shown as text.
 */
export function referencesSection(refs: string[] | undefined): string {
  if (!refs?.length) {
    return '';
  }
  const item = (r: string): string =>
    /^https?:\/\/[^\s"'<>]+$/.test(r)
      ? `<li><a href="#" class="ref-link" data-url="${esc(r)}" title="Open in the browser">${esc(r)}</a></li>`
      : `<li><code>${esc(r)}</code></li>`;
  return `<section aria-labelledby="h-refs"><h2 id="h-refs">References</h2><ul>${refs.map(item).join('')}</ul></section>`;
}

function relatedSection(related: Array<RelatedEntry | string> | undefined): string {
  const items = (related ?? [])
    .map((r) => (typeof r === 'string' ? { id: r, title: r } : r))
    .filter((r) => r && typeof r.id === 'string');
  if (!items.length) {
    return '';
  }
  return (
    `<section class="related" aria-labelledby="h-rel"><h2 id="h-rel">Related failures</h2><ul>` +
    items
      .map(
        (r) =>
          `<li><a href="#" class="entry-link" data-signature="${esc(r.id)}">${esc(r.title ?? r.id)}</a>` +
          ` <span class="muted">${esc(r.id)}</span></li>`,
      )
      .join('') +
    `</ul></section>`
  );
}

const LEGEND: Array<[string, string]> = [
  ['initiating', 'initiating event'],
  ['cause', 'same error, another rank'],
  ['other', 'other finding'],
  ['collateral', 'collateral'],
];

/** The legend of the kinds of mark that are drawn. */
function legend(kinds: Set<string>): string {
  return (
    `<div class="legend" aria-hidden="true">` +
    LEGEND.filter(([kind]) => kinds.has(kind))
      .map(
        ([kind, label]) =>
          `<span class="key"><span class="tl-mark tl-${kind} tl-key"><span class="tl-shape"></span></span>${label}</span>`,
      )
      .join('') +
    `</div>`
  );
}

/** The user's own frame of the root cause (`user_frame`, else the innermost frame with `user`). */
export function userFrame(cause: RootCause): UserFrame | undefined {
  if (cause.user_frame) {
    return cause.user_frame;
  }
  for (let i = cause.frames.length - 1; i >= 0; i--) {
    const fr = cause.frames[i];
    if (fr.user && fr.line > 0) {
      return { file: fr.file, line: fr.line, func: fr.func };
    }
  }
  return undefined;
}

/**
 * The initiating rank the engine names, or null. Never the root cause's own rank when the
 * engine names none: that rank only reported the failure (a victim's watchdog line), and a
 * wrong rank costs more than none (the CLI's headline and "Initiating rank" say the same).
 */
function answerRank(d: Diagnosis): number | null {
  return typeof d.initiating_rank === 'number' ? d.initiating_rank : null;
}

/** The initiating host, else the root cause's host when its line names no rank (as the CLI). */
function answerHost(d: Diagnosis, cause: RootCause): string | null {
  if (d.initiating_host) {
    return d.initiating_host;
  }
  return cause.rank === null || cause.rank === undefined ? (cause.host ?? null) : null;
}

/** The answer first: root cause, initiating rank and host, the one-line fix, the verification command. */
function verdictSection(d: Diagnosis, cause: RootCause, ctx: PageContext, ids: { next: () => string }): string {
  const rank = answerRank(d);
  const host = answerHost(d, cause);
  const where: string[] = [];
  if (rank !== null) {
    where.push(`${waitedFor(d) ? 'caused by' : 'on'} <strong class="verdict-rank">rank ${rank}</strong>`);
  } else if (typeof cause.rank === 'number') {
    where.push(`<span class="muted">reported on rank ${cause.rank}</span>`);
  }
  if (host) {
    where.push(`host <strong>${esc(host)}</strong>`);
  }
  const frame = userFrame(cause);
  if (frame) {
    where.push(
      `<a href="#" class="frame-link" data-frame="${esc(frame.file)}" data-line="${frame.line}" title="${esc(
        `Open ${frame.file}:${frame.line} in the workspace`,
      )}"><code>${esc(`${basename(frame.file)}:${frame.line}`)}</code></a>` +
        (frame.func ? ` <span class="muted">in ${esc(frame.func)}</span>` : ''),
    );
  }
  const first = cause.evidence?.[0];
  if (first) {
    where.push(evidenceLink(first, ctx));
  }
  const steps = cause.fix.steps;
  const parts = [
    `<section class="verdict" aria-labelledby="h-cause"><p class="eyebrow">Root cause</p>` +
      `<h1 id="h-cause">${esc(cause.title)}</h1>` +
      (where.length ? `<p class="where">${where.join(' · ')}</p>` : '') +
      (steps.length ? `<p class="fix-line"><strong>Fix:</strong> ${esc(steps[0])}</p>` : ''),
  ];
  if (cause.verify) {
    const id = ids.next();
    const blanks = unfilledPlaceholders(cause.verify);
    parts.push(
      `<div class="verify-line"><strong>Verify:</strong><pre><code id="${id}">${esc(cause.verify)}</code></pre>` +
        `<div class="actions">${copyButton(id, 'verification command')}${runButton(id, ctx)}</div>` +
        (blanks.length ? `<p class="muted">Fill in ${esc(blanks.join(', '))} before running it.</p>` : '') +
        `</div>`,
    );
  }
  const variant = cause.fix.variant;
  parts.push(
    `<div class="badges"><span class="badge class">${esc(cause.failure_class)}</span>` +
      `<span class="badge confidence" title="How sure the engine is">confidence ${percent(cause.confidence)}</span>` +
      // the signature's link reads "entry" when its id is the class's (no chip said twice)
      `<a href="#" class="badge entry-link" data-signature="${esc(cause.signature)}">${esc(cause.signature === cause.failure_class ? 'entry' : cause.signature)}</a>` +
      (variant?.id ? `<span class="badge" title="${esc(variant.why ?? '')}">fix: ${esc(variant.id)}</span>` : '') +
      `</div></section>`,
  );
  return parts.join('');
}

/**
 * Engine prose names lines as `<source>:<line>` (`notes.md:7-12:5` for a selection): read
 * them through the page's location label (`notes.md:11`).
 */
export function relabelLocations(text: string, sources: string[], location: LocationLabel): string {
  let out = text;
  for (const source of [...sources].sort((a, b) => b.length - a.length)) {
    if (!source) {
      continue;
    }
    const escaped = source.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    out = out.replace(new RegExp(`${escaped}:(\\d+)`, 'g'), (_, line: string) => location(source, Number(line)));
  }
  return out;
}

function initiatorSection(d: Diagnosis, cause: RootCause, ctx: PageContext): string {
  const rank = answerRank(d);
  const host = answerHost(d, cause);
  const init = d.initiator;
  const why: string[] = [];
  if (init?.why) {
    why.push(
      esc(relabelLocations(init.why, d.sources ?? [], ctx.location ?? defaultLocation)) +
        (init.agreeing?.length ? ` <span class="muted">(agreeing: ${esc(init.agreeing.join(', '))})</span>` : ''),
    );
  }
  why.push(
    ...(d.reasoning ?? []).map((r) => esc(relabelLocations(r, d.sources ?? [], ctx.location ?? defaultLocation))),
  );
  const sites = (cause.call_sites ?? []).filter((s) => s && typeof s.file === 'string');
  return (
    `<section class="initiating" aria-labelledby="h-init"><h2 id="h-init">Initiating rank</h2>` +
    `<p class="big">${rank === null ? 'unknown: the log does not tell' : `rank ${rank}`}` +
    `${host ? ` on <strong>${esc(host)}</strong>` : ''}</p>` +
    (why.length ? `<ul class="reasoning">${why.map((r) => `<li>${r}</li>`).join('')}</ul>` : '') +
    (sites.length
      ? `<h3>Call sites</h3><ul class="call-sites">` +
        sites
          .map(
            (s) =>
              `<li>${s.rank !== null && s.rank !== undefined ? `rank ${s.rank}: ` : ''}<code>${esc(`${basename(s.file)}:${s.line}`)}</code>` +
              `${s.func ? ` in ${esc(s.func)}` : ''}${s.collective ? ` <span class="muted">(${esc(s.collective)})</span>` : ''}</li>`,
          )
          .join('') +
        `</ul>`
      : '') +
    `</section>`
  );
}

function explanationsSection(d: Diagnosis, ctx: PageContext): string {
  const edges = (d.explanations ?? []).filter((e) => e && e.cause && e.effect);
  if (!edges.length) {
    return '';
  }
  const ref = (r: EventRef): string => {
    const what = r.signature ?? r.kind;
    const rank = r.rank !== null && r.rank !== undefined ? `rank ${r.rank}: ` : '';
    const at =
      r.path && r.line
        ? ` (${evidenceLink({ path: r.path, line: r.line, text: '', rank: r.rank ?? null, column_start: null, column_end: null }, ctx)})`
        : '';
    return `${esc(rank + what)}${at}`;
  };
  return (
    `<details class="explanations"><summary>Why each failure is collateral (${plural(edges.length, 'link')})</summary><ul>` +
    edges.map((e) => `<li>${ref(e.cause)} → ${ref(e.effect)}: ${esc(e.why)}</li>`).join('') +
    `</ul></details>`
  );
}

/** JSON for a `<script type="application/json">` block: `<` escaped so no tag can close it. */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

function curvesSection(d: Diagnosis, ctx: PageContext): string {
  const series = (d.metrics ?? []).filter(
    (s) => s && typeof s.name === 'string' && Array.isArray(s.points) && s.points.length,
  );
  if (!series.length || !ctx.chartsScriptUri) {
    return '';
  }
  const names = [...new Set(series.map((s) => s.name))];
  const onsets = series.flatMap((s) => (s.onsets ?? []).map((o) => ({ ...o, metric: s.name })));
  const seen = new Set<string>();
  const uniqueOnsets = onsets.filter((o) => {
    const key = `${o.kind}|${o.step}|${o.rank}|${o.path}|${o.line}`;
    return seen.has(key) ? false : (seen.add(key), true);
  });
  return (
    `<section class="curves" aria-labelledby="h-curves"><h2 id="h-curves">Training curves</h2>` +
    `<div class="charts" id="charts">` +
    names
      .map(
        (n) =>
          `<figure class="chart" data-metric="${esc(n)}"><figcaption>${esc(n)}</figcaption><div class="chart-body"></div></figure>`,
      )
      .join('') +
    `</div>` +
    (uniqueOnsets.length
      ? `<ul class="onsets">` +
        uniqueOnsets
          .map(
            (o) =>
              `<li><span class="onset-key" aria-hidden="true"></span>${esc(o.kind)} at step ${o.step}` +
              `${o.rank !== null && o.rank !== undefined ? ` on rank ${o.rank}` : ''}: ${esc(o.why)} ` +
              evidenceLink(
                { path: o.path, line: o.line, text: '', rank: o.rank ?? null, column_start: null, column_end: null },
                ctx,
              ) +
              `</li>`,
          )
          .join('') +
        `</ul>`
      : '') +
    `<script type="application/json" id="metrics-data">${jsonForScript(series)}</script></section>`
  );
}

/**
 * The report page for a diagnosis: the verdict first, then the timeline (and the training
 * curves when the engine sends `metrics`), the initiating rank's reasoning, evidence,
 * collateral, the fix (the detected stack's code open, the others one click away), confirm,
 * related entries.
 *
 * @param d the `rootrank.diagnosis/1` object.
 * @param ctx URIs, nonce, whether Run is allowed, how locations read.
 */
export function renderReportHtml(d: Diagnosis, ctx: PageContext): string {
  let counter = 0;
  const ids = { next: () => `blk${++counter}` };
  const cause = d.root_cause;
  const parts: string[] = [];
  if (!cause) {
    parts.push(`<section class="verdict none"><h1 id="h-cause">No known failure found</h1>`);
    if (d.unclassified) {
      const u = d.unclassified;
      const ev = u.evidence?.[0];
      parts.push(
        `<p>The last exception seen${u.rank !== null && u.rank !== undefined ? ` (rank ${u.rank})` : ''} matches no signature:</p>` +
          (ev ? `<pre class="evidence">${esc(ev.text)}</pre><p>${evidenceLink(ev, ctx)}</p>` : ''),
      );
    }
    const sources = d.sources.length;
    parts.push(
      `<p class="muted">${plural(d.lines_read ?? 0, 'line')} read from ${sources ? plural(sources, 'source') : 'the text'}.</p></section>`,
    );
  } else {
    parts.push(verdictSection(d, cause, ctx, ids));
  }
  const layout = layoutTimeline(d);
  parts.push(
    `<section class="timeline-wrap" aria-labelledby="h-tl"><h2 id="h-tl">Rank timeline</h2>` +
      (layout.marks.length
        ? renderTimelineHtml(layout, ctx.location ?? defaultLocation) +
          legend(new Set(layout.marks.map((m) => m.kind))) +
          `<p class="muted hint">${
            layout.mode === 'time'
              ? 'Marks are placed by time.'
              : layout.mode === 'spread'
                ? 'Marks are in time order, spread evenly because they cluster; the axis gives their real times.'
                : 'Marks are placed in log order (not every line has a timestamp).'
          } Hover or focus a mark for details; click or press Enter to open its line.</p>`
        : `<p class="muted">No events to draw.</p>`) +
      `</section>`,
  );
  parts.push(curvesSection(d, ctx));
  if (cause) {
    parts.push(initiatorSection(d, cause, ctx));
    parts.push(
      `<section class="about" aria-labelledby="h-about"><h2 id="h-about">What happened</h2>` +
        (cause.summary ? `<p>${esc(cause.summary)}</p>` : '') +
        (cause.mechanism
          ? `<details><summary>Why this happens</summary><p>${esc(cause.mechanism)}</p></details>`
          : '') +
        `</section>`,
    );
    if (cause.evidence?.length) {
      parts.push(
        `<section class="evidence" aria-labelledby="h-ev"><h2 id="h-ev">Evidence</h2><ul class="evidence-list">` +
          cause.evidence
            .map(
              (e) =>
                `<li>${evidenceLink(e, ctx)}${e.rank !== null && e.rank !== undefined ? ` <span class="muted">rank ${e.rank}</span>` : ''}` +
                `<pre class="evidence">${esc(e.text)}</pre></li>`,
            )
            .join('') +
          `</ul></section>`,
      );
    }
    parts.push(collateralTable(d.collateral ?? [], cause.evidence ?? [], ctx));
    parts.push(explanationsSection(d, ctx));
    parts.push(fixSection(cause.fix, d.stack, ctx, ids));
    if (cause.confirm?.length) {
      parts.push(
        `<section class="confirm" aria-labelledby="h-confirm"><h2 id="h-confirm">Confirm</h2><ul class="checklist">` +
          cause.confirm
            .map(
              (c, i) => `<li><input type="checkbox" id="confirm${i}"><label for="confirm${i}">${esc(c)}</label></li>`,
            )
            .join('') +
          `</ul></section>`,
      );
    }
    parts.push(relatedSection(cause.related));
    parts.push(referencesSection(cause.references));
  }
  if (d.warnings?.length) {
    parts.push(
      `<section class="warnings"><h2>Warnings</h2><ul>${d.warnings.map((w) => `<li>${esc(w)}</li>`).join('')}</ul></section>`,
    );
  }
  const title = cause ? `rootrank: ${cause.title}` : 'rootrank: no known failure';
  return page(ctx, title, `<main class="report">${parts.join('')}</main>`, Boolean(d.metrics?.length));
}

/** A signature entry as `rootrank.signature` returns it (fields optional). */
export interface Entry {
  id: string;
  title?: string;
  failure_class?: string;
  category?: string;
  entry?: { summary?: string; mechanism?: string; symptoms?: Array<{ text: string; meaning: string }> };
  fix?: { steps?: string[]; code?: Record<string, string> };
  confirm?: string[];
  verify?: string;
  references?: string[];
  related?: Array<RelatedEntry | string>;
  [key: string]: unknown;
}

/** The page for one failure-library entry. */
/**
 * The tab title of a library entry: its id, so the entry opened from a report ("entry") is
 * told apart from the report's own tab, whose title is the same signature's title.
 */
export function entryTitle(e: Pick<Entry, 'id'>): string {
  return `rootrank entry: ${e.id}`;
}

export function renderEntryHtml(e: Entry, ctx: PageContext): string {
  let counter = 0;
  const ids = { next: () => `blk${++counter}` };
  const parts: string[] = [
    `<section class="cause"><h1>${esc(e.title ?? e.id)}</h1><div class="badges">` +
      `<span class="badge class">${esc(e.failure_class ?? '')}</span>` +
      (e.id !== e.failure_class ? `<span class="badge">${esc(e.id)}</span>` : '') +
      `</div>` +
      (e.entry?.summary ? `<p>${esc(e.entry.summary)}</p>` : '') +
      `</section>`,
  ];
  if (e.entry?.mechanism) {
    parts.push(`<section><h2>Mechanism</h2><p>${esc(e.entry.mechanism)}</p></section>`);
  }
  if (e.entry?.symptoms?.length) {
    parts.push(
      `<section><h2>Symptoms</h2><dl>` +
        e.entry.symptoms.map((s) => `<dt><code>${esc(s.text)}</code></dt><dd>${esc(s.meaning)}</dd>`).join('') +
        `</dl></section>`,
    );
  }
  parts.push(fixSection(e.fix, undefined, ctx, ids));
  if (e.confirm?.length) {
    parts.push(`<section><h2>Confirm</h2><ul>${e.confirm.map((c) => `<li>${esc(c)}</li>`).join('')}</ul></section>`);
  }
  if (e.verify) {
    const id = ids.next();
    parts.push(
      `<section class="verify"><h2>Verify</h2><pre><code id="${id}">${esc(e.verify)}</code></pre>` +
        `<div class="actions">${copyButton(id, 'verification command')}${runButton(id, ctx)}</div></section>`,
    );
  }
  parts.push(relatedSection(e.related));
  parts.push(referencesSection(e.references));
  return page(ctx, entryTitle(e), `<main class="report entry">${parts.join('')}</main>`);
}
