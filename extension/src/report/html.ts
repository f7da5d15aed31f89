/**
 * The report and entry pages of the webview, as HTML strings. Pure (no `vscode` import):
 * the panel passes in the URIs and the nonce. Everything from the diagnosis is escaped;
 * the page loads only `report.css` and `report.js` from the extension (strict CSP, no
 * inline style, no remote resource). Interactive elements carry `data-*` attributes that
 * `media/report.js` turns into messages: `open` (path, 1-based line), `copy`, `run`,
 * `entry` (signature id).
 */
import type { Collateral, Diagnosis, Evidence, RelatedEntry, RootCause } from './diagnosis';
import { escapeHtml as esc } from './escape';
import { layoutTimeline, renderTimelineSvg } from './timeline';

/** What the page needs from its host. */
export interface PageContext {
  /** `webview.cspSource`. */
  cspSource: string;
  /** A fresh random nonce for the script tag. */
  nonce: string;
  /** `webview.asWebviewUri(...)` of `media/report.css` and `media/report.js`. */
  styleUri: string;
  scriptUri: string;
  /** False in an untrusted workspace: Run buttons are disabled with a reason. */
  canRun: boolean;
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

function page(ctx: PageContext, title: string, body: string): string {
  return (
    `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8">` +
    `<meta http-equiv="Content-Security-Policy" content="${esc(contentSecurityPolicy(ctx))}">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1.0">` +
    `<link rel="stylesheet" href="${esc(ctx.styleUri)}"><title>${esc(title)}</title></head>` +
    `<body>${body}<script nonce="${esc(ctx.nonce)}" src="${esc(ctx.scriptUri)}"></script></body></html>`
  );
}

function basename(path: string): string {
  return path.split(/[\\/]/).pop() || path;
}

/** A link to a log line (`path:line`), or plain text when the path is not a file. */
function evidenceLink(e: Evidence, label?: string): string {
  const text = label ?? `${basename(e.path)}:${e.line}`;
  return `<a href="#" class="evidence-link" data-path="${esc(e.path)}" data-line="${e.line}" title="${esc(
    `${e.path}:${e.line}`,
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

function fixSection(cause: RootCause, ctx: PageContext, ids: { next: () => string }): string {
  const fix = cause.fix;
  const steps = Array.isArray(fix) ? fix : (fix?.steps ?? []);
  const code = Array.isArray(fix) ? {} : (fix?.code ?? {});
  if (!steps.length && !Object.keys(code).length) {
    return '';
  }
  const parts = ['<section class="fix" aria-labelledby="h-fix"><h2 id="h-fix">Fix</h2>'];
  if (steps.length) {
    parts.push(`<ol>${steps.map((s) => `<li>${esc(s)}</li>`).join('')}</ol>`);
  }
  const stacks = Object.keys(code);
  const preferred = cause.stack && typeof cause.stack === 'string' ? [cause.stack] : [];
  stacks.sort((a, b) => Number(preferred.includes(b)) - Number(preferred.includes(a)));
  for (const stack of stacks) {
    const id = ids.next();
    parts.push(
      `<div class="code-block"><div class="code-head"><span class="stack">${esc(stack)}</span>${copyButton(
        id,
        `${stack} code`,
      )}</div><pre><code id="${id}">${esc(code[stack].replace(/\n$/, ''))}</code></pre></div>`,
    );
  }
  parts.push('</section>');
  return parts.join('');
}

function collateralTable(rows: Collateral[]): string {
  if (!rows.length) {
    return '';
  }
  const body = rows
    .map((c) => {
      const first = c.evidence?.[0];
      const ranks = ranksLabel(c.ranks);
      const lines = (c.evidence ?? []).slice(0, 6).map((e) => evidenceLink(e)).join(' ');
      return (
        `<tr><td>${first ? evidenceLink(first, c.title ?? c.signature) : esc(c.title ?? c.signature)}` +
        `<div class="muted">${esc(c.failure_class)}</div></td><td>${esc(ranks)}</td>` +
        `<td class="num">${c.count}</td><td>${lines}</td></tr>`
      );
    })
    .join('');
  return (
    `<section class="collateral" aria-labelledby="h-coll"><h2 id="h-coll">Collateral</h2>` +
    `<p class="muted">Failures the root cause explains: they happened because of it.</p>` +
    `<table><thead><tr><th scope="col">Kind</th><th scope="col">Ranks</th><th scope="col">Count</th>` +
    `<th scope="col">Lines</th></tr></thead><tbody>${body}</tbody></table></section>`
  );
}

/** "0-4, 6, 7" for a list of ranks (sorted; runs of three or more collapsed, as the engine writes them); "—" when empty. */
export function ranksLabel(ranks: Array<number | null> | undefined): string {
  const sorted = [...new Set((ranks ?? []).filter((r): r is number => typeof r === 'number'))].sort(
    (a, b) => a - b,
  );
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
  ['cause', 'root cause, another rank'],
  ['other', 'other finding'],
  ['collateral', 'collateral'],
];

/** The legend of the kinds of mark that are drawn. */
function legend(kinds: Set<string>): string {
  return (
    `<div class="legend" aria-hidden="true">` +
    LEGEND.filter(([kind]) => kinds.has(kind))
      .map(([kind, label]) => `<span class="key tl-${kind}-key">${label}</span>`)
      .join('') +
    `</div>`
  );
}

/**
 * The report page for a diagnosis.
 *
 * @param d the `rootrank.diagnosis/1` object.
 * @param ctx URIs, nonce and whether Run is allowed.
 */
export function renderReportHtml(d: Diagnosis, ctx: PageContext): string {
  let counter = 0;
  const ids = { next: () => `blk${++counter}` };
  const cause = d.root_cause;
  const parts: string[] = [];
  const layout = layoutTimeline(d);
  parts.push(
    `<section class="timeline-wrap" aria-labelledby="h-tl"><h2 id="h-tl">Rank timeline</h2>` +
      (layout.marks.length
        ? `<div class="timeline-scroll">${renderTimelineSvg(layout)}</div>${legend(new Set(layout.marks.map((m) => m.kind)))}` +
          `<p class="muted hint">${layout.mode === 'time' ? 'Marks are placed by time.' : 'Marks are placed in log order (not every line has a timestamp).'} Hover or focus a mark for details; click or press Enter to open its line.</p>`
        : `<p class="muted">No events to draw.</p>`) +
      `</section>`,
  );
  if (!cause) {
    parts.push(`<section class="cause none"><h1>No known failure found</h1>`);
    if (d.unclassified) {
      const u = d.unclassified;
      const ev = u.evidence?.[0];
      parts.push(
        `<p>The last exception seen${u.rank !== null ? ` (rank ${u.rank})` : ''} matches no signature:</p>` +
          (ev ? `<pre class="evidence">${esc(ev.text)}</pre><p>${evidenceLink(ev)}</p>` : ''),
      );
    }
    parts.push(
      `<p class="muted">${d.lines_read ?? 0} lines read from ${esc(d.sources.join(', ') || 'the text')}.</p></section>`,
    );
  } else {
    const rank = d.initiating_rank ?? cause.rank;
    const host = d.initiating_host ?? cause.host;
    parts.push(
      `<section class="cause" aria-labelledby="h-cause"><h1 id="h-cause">${esc(cause.title)}</h1>` +
        `<div class="badges"><span class="badge class">${esc(cause.failure_class)}</span>` +
        `<span class="badge confidence" title="How sure the engine is">confidence ${percent(cause.confidence)}</span>` +
        `<a href="#" class="badge entry-link" data-signature="${esc(cause.signature)}">${esc(cause.signature)}</a></div>` +
        (cause.summary ? `<p>${esc(cause.summary)}</p>` : '') +
        (cause.mechanism ? `<details><summary>Why this happens</summary><p>${esc(cause.mechanism)}</p></details>` : '') +
        `</section>`,
    );
    parts.push(
      `<section class="initiating" aria-labelledby="h-init"><h2 id="h-init">Initiating rank</h2>` +
        `<p class="big">${rank === null || rank === undefined ? 'unknown' : `rank ${rank}`}` +
        `${host ? ` on <strong>${esc(host)}</strong>` : ''}</p>` +
        (d.reasoning?.length ? `<ul class="reasoning">${d.reasoning.map((r) => `<li>${esc(r)}</li>`).join('')}</ul>` : '') +
        `</section>`,
    );
    if (cause.evidence?.length) {
      parts.push(
        `<section class="evidence" aria-labelledby="h-ev"><h2 id="h-ev">Evidence</h2><ul class="evidence-list">` +
          cause.evidence
            .map(
              (e) =>
                `<li>${evidenceLink(e)}${e.rank !== null ? ` <span class="muted">rank ${e.rank}</span>` : ''}` +
                `<pre class="evidence">${esc(e.text)}</pre></li>`,
            )
            .join('') +
          `</ul></section>`,
      );
    }
    parts.push(collateralTable(d.collateral ?? []));
    parts.push(fixSection(cause, ctx, ids));
    if (cause.confirm?.length) {
      parts.push(
        `<section class="confirm" aria-labelledby="h-confirm"><h2 id="h-confirm">Confirm</h2><ul class="checklist">` +
          cause.confirm
            .map((c, i) => `<li><input type="checkbox" id="confirm${i}"><label for="confirm${i}">${esc(c)}</label></li>`)
            .join('') +
          `</ul></section>`,
      );
    }
    if (cause.verify) {
      const id = ids.next();
      parts.push(
        `<section class="verify" aria-labelledby="h-verify"><h2 id="h-verify">Verify</h2>` +
          `<pre><code id="${id}">${esc(cause.verify)}</code></pre>` +
          `<div class="actions">${copyButton(id, 'verification command')}${runButton(id, ctx)}</div></section>`,
      );
    }
    parts.push(relatedSection(cause.related));
  }
  if (d.warnings?.length) {
    parts.push(`<section class="warnings"><h2>Warnings</h2><ul>${d.warnings.map((w) => `<li>${esc(w)}</li>`).join('')}</ul></section>`);
  }
  const title = cause ? `rootrank: ${cause.title}` : 'rootrank: no known failure';
  return page(ctx, title, `<main class="report">${parts.join('')}</main>`);
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
export function renderEntryHtml(e: Entry, ctx: PageContext): string {
  let counter = 0;
  const ids = { next: () => `blk${++counter}` };
  const parts: string[] = [
    `<section class="cause"><h1>${esc(e.title ?? e.id)}</h1><div class="badges">` +
      `<span class="badge class">${esc(e.failure_class ?? '')}</span><span class="badge">${esc(e.id)}</span></div>` +
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
  parts.push(
    fixSection(
      { signature: e.id, title: e.title ?? e.id, failure_class: e.failure_class ?? '', confidence: 1, rank: null, host: null, evidence: [], fix: e.fix },
      ctx,
      ids,
    ),
  );
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
  if (e.references?.length) {
    parts.push(
      `<section><h2>References</h2><ul>${e.references.map((r) => `<li><code>${esc(r)}</code></li>`).join('')}</ul></section>`,
    );
  }
  return page(ctx, `rootrank: ${e.title ?? e.id}`, `<main class="report entry">${parts.join('')}</main>`);
}
