import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { asDiagnosis, Diagnosis, headline } from '../../src/report/diagnosis';
import {
  contentSecurityPolicy,
  entryTitle,
  referencesSection,
  renderEntryHtml,
  renderReportHtml,
  ranksLabel,
} from '../../src/report/html';
import { bestFrameFile, frameFileName } from '../../src/report/frameFile';

// A diagnosis made by the engine (rootrank.engine.diagnose_text) from extension/samples/torchrun-8gpu-oom.log.
const FIXTURE = path.resolve(__dirname, '../../../../extension/test/fixtures/torchrun-8gpu-oom.diagnosis.json');
const sample = (): Diagnosis => asDiagnosis(JSON.parse(fs.readFileSync(FIXTURE, 'utf8')));
const ctx = {
  cspSource: 'vscode-webview://x',
  nonce: 'N0nce',
  styleUri: 'vscode-webview://x/report.css',
  scriptUri: 'vscode-webview://x/report.js',
  canRun: true,
};

describe('asDiagnosis / headline', () => {
  it('accepts the engine output and names the failure and rank', () => {
    const d = sample();
    assert.equal(d.root_cause?.signature, 'cuda-oom');
    assert.equal(headline(d), 'CUDA out of memory in the caching allocator on rank 5 (host-1)');
  });

  it('rejects another schema', () => {
    assert.throws(() => asDiagnosis({ schema: 'other/1' }), /expected schema rootrank.diagnosis\/1/);
    assert.throws(() => asDiagnosis(null), /expected a diagnosis object/);
  });

  it('names no rank when the engine names no initiating rank (the root line only reported it)', () => {
    // victims only (trial r15, finding 2): root_cause.rank is the rank of the watchdog line
    const d = { ...sample(), initiating_rank: null, initiating_host: null };
    assert.equal(d.root_cause?.rank, 5);
    assert.equal(headline(d), 'CUDA out of memory in the caching allocator');
    const html = renderReportHtml(d, ctx);
    assert.match(html, /<h2 id="h-init">Initiating rank<\/h2><p class="big">unknown: the log does not tell<\/p>/);
    assert.match(html, /<span class="muted">reported on rank 5<\/span>/);
    assert.doesNotMatch(html, /class="verdict-rank"/);
  });

  it('says "caused by" the initiating rank when the ranks that reported the root cause do not include it', () => {
    // a silent rank the others timed out waiting for (trial r19, finding 4): rank 5 printed none
    // of the root cause's lines, so it did not "hit" them
    const d = sample();
    const others = { ...d, root_cause: { ...d.root_cause!, ranks: [0, 1] } };
    assert.equal(headline(others), 'CUDA out of memory in the caching allocator caused by rank 5 (host-1)');
    assert.match(renderReportHtml(others, ctx), /caused by <strong class="verdict-rank">rank 5<\/strong>/);
    assert.match(renderReportHtml(d, ctx), /on <strong class="verdict-rank">rank 5<\/strong>/);
  });

  it('has no headline without a root cause', () => {
    assert.equal(headline({ ...sample(), root_cause: null }), undefined);
  });
});

describe('ranksLabel', () => {
  it('collapses runs', () => {
    assert.equal(ranksLabel([7, 0, 1, 2, 3, 4, 6]), '0-4, 6, 7');
    assert.equal(ranksLabel([5]), '5');
    assert.equal(ranksLabel([2, 3]), '2, 3');
    assert.equal(ranksLabel([]), '—');
  });
});

describe('renderReportHtml', () => {
  const html = renderReportHtml(sample(), ctx);

  it('sets a strict CSP with the nonce and no remote source', () => {
    assert.equal(
      contentSecurityPolicy(ctx),
      "default-src 'none'; img-src vscode-webview://x data:; style-src vscode-webview://x; font-src vscode-webview://x; script-src 'nonce-N0nce'",
    );
    assert.match(html, /<script nonce="N0nce" src="vscode-webview:\/\/x\/report.js">/);
    assert.doesNotMatch(html, /(src|href)="https?:/, 'no remote resource is loaded');
    assert.doesNotMatch(html, / style="/, 'no inline style (CSP forbids it)');
  });

  it('shows the root cause, class, confidence and initiating rank with the host', () => {
    assert.match(html, /<h1 id="h-cause">CUDA out of memory in the caching allocator<\/h1>/);
    assert.match(html, /<span class="badge class">cuda-oom<\/span>/);
    // the signature id equals the class: its link reads "entry", the id is not shown twice
    assert.match(html, /data-signature="cuda-oom">entry<\/a>/);
    assert.equal(html.match(/>cuda-oom</g)?.length, 1);
    assert.match(html, /confidence \d+%/);
    assert.match(html, /<p class="big">rank 5 on <strong>host-1<\/strong><\/p>/);
    assert.match(html, /Rank 5 hit &quot;CUDA out of memory in the caching allocator&quot; \(sample.log:18\)/);
  });

  it('lists the collateral with ranks, counts and links to their lines', () => {
    assert.match(html, /<td>0-4, 6, 7<\/td><td class="num">7<\/td>/);
    assert.match(html, /data-path="sample.log" data-line="19"/);
  });

  it("says how many of a group's lines its links leave out", () => {
    // the watchdog group: 7 lines, 6 linked; the teardown group: 4 lines, its 2 evidence lines linked
    const rows = html.slice(html.indexOf('id="h-coll"')).split('<tr>').slice(2);
    assert.equal((rows[0].match(/class="evidence-link"/g) ?? []).length, 1 + 6);
    assert.match(rows[0], /<span class="muted">\+1 more<\/span><\/td><\/tr>/);
    assert.match(rows[1], /<span class="muted">\+2 more<\/span><\/td><\/tr>/);
  });

  it('shows a legend for the kinds of mark drawn only', () => {
    const legend = html.slice(html.indexOf('<div class="legend"'));
    assert.match(
      legend,
      /^<div class="legend" aria-hidden="true"><span class="key"><span class="tl-mark tl-initiating tl-key"><span class="tl-shape"><\/span><\/span>initiating event<\/span><span class="key"><span class="tl-mark tl-collateral tl-key"><span class="tl-shape"><\/span><\/span>collateral<\/span><\/div>/,
    );
    assert.doesNotMatch(legend.split('</div>')[0], /tl-other/);
    assert.match(html, /placed in log order/);
  });

  it('links the evidence to its log line', () => {
    assert.match(html, /class="evidence-link" data-path="sample.log" data-line="18"/);
  });

  it('offers Copy for each code block and Copy + Run for the verification command', () => {
    const copies = html.match(/class="copy" data-copy-target="blk\d+"/g) ?? [];
    const codeBlocks = Object.keys((sample().root_cause?.fix as { code: object }).code).length;
    assert.equal(copies.length, codeBlocks + 1);
    assert.match(html, /<button class="run" data-run-target="blk\d+">Run in Terminal<\/button>/);
  });

  it('disables Run in an untrusted workspace', () => {
    const untrusted = renderReportHtml(sample(), { ...ctx, canRun: false });
    assert.match(untrusted, /<button class="run" disabled title="Disabled in an untrusted workspace">/);
    assert.doesNotMatch(untrusted, /data-run-target/);
  });

  it('links the root cause entry references for the browser', () => {
    const refs = sample().root_cause?.references ?? [];
    assert.ok(refs.length > 0);
    const section = html.slice(html.indexOf('<h2 id="h-refs">References</h2>'));
    for (const r of refs) {
      assert.ok(section.includes(`data-url="${r}"`), r);
    }
    assert.equal(referencesSection([]), '');
    assert.equal(referencesSection(['javascript:alert(1)']).includes('data-url'), false);
  });

  it('renders the confirm checklist', () => {
    const confirm = sample().root_cause?.confirm ?? [];
    assert.ok(confirm.length > 0);
    assert.equal((html.match(/<input type="checkbox" id="confirm\d+">/g) ?? []).length, confirm.length);
  });

  it('escapes text from the log', () => {
    const d = sample();
    d.root_cause!.title = '<img src=x onerror=alert(1)>';
    const out = renderReportHtml(d, ctx);
    assert.ok(out.includes('&lt;img src=x onerror=alert(1)&gt;'));
    assert.ok(!out.includes('<img src=x'));
  });

  it('says when nothing is known', () => {
    const out = renderReportHtml({ ...sample(), root_cause: null, collateral: [] }, ctx);
    assert.match(
      out,
      /<h1 id="h-cause">No known failure found<\/h1><p class="muted">57 lines read from 1 source.<\/p>/,
    );
    const one = renderReportHtml({ ...sample(), root_cause: null, collateral: [], lines_read: 1 }, ctx);
    assert.match(one, /1 line read from 1 source\./);
  });

  it('leads with the verdict: root cause, rank and host, user frame, one-line fix, verification command', () => {
    const main = html.slice(html.indexOf('<main'));
    const order = [
      '<h1 id="h-cause">CUDA out of memory',
      'rank 5</strong>',
      'host <strong>host-1',
      'model.py:97</code></a>',
      '<strong>Fix:</strong> Lower the peak memory on rank 5',
      '<strong>Verify:</strong><pre><code id="blk1">PYTORCH_CUDA_ALLOC_CONF',
      'id="h-tl"',
      'id="h-init"',
      'id="h-coll"',
      'id="h-fix"',
    ];
    const at = order.map((o) => main.indexOf(o));
    assert.ok(
      at.every((i) => i > 0),
      JSON.stringify(at),
    );
    assert.deepEqual(
      at,
      [...at].sort((a, b) => a - b),
    );
    assert.match(main, /<p class="muted">Fill in &lt;gpus&gt; before running it.<\/p>/);
  });

  it("opens only the detected stack's fix; the others are one click away", () => {
    const opened = html.match(/<details class="code-block" open>/g) ?? [];
    assert.equal(opened.length, 1);
    assert.match(
      html,
      /<details class="code-block" open><summary><span class="stack">PyTorch<\/span> <span class="muted">\(default\)<\/span>/,
    );
    assert.equal((html.match(/<details class="code-block">/g) ?? []).length, 4);
    const hf = renderReportHtml({ ...sample(), stack: ['hf'] }, ctx);
    assert.match(
      hf,
      /<details class="code-block" open><summary><span class="stack">Hugging Face Trainer \/ Accelerate<\/span> <span class="muted">\(seen in the log\)/,
    );
  });

  it('reads selection locations as file:line and never lists the root line as its own collateral', () => {
    const d = sample();
    d.collateral = [{ ...d.collateral[0], evidence: [d.root_cause!.evidence[0]] }, ...d.collateral.slice(1)];
    const out = renderReportHtml(d, { ...ctx, location: (p, line) => `notes.md:${line + 6}` });
    assert.match(
      out,
      /<a href="#" class="evidence-link" data-path="sample.log" data-line="18" title="notes.md:24">notes.md:24<\/a>/,
    );
    assert.doesNotMatch(out, /sample\.log:\d+-\d+|:\d+-\d+:\d+/);
    const table = out.slice(out.indexOf('h-coll'), out.indexOf('</table>'));
    assert.doesNotMatch(table, /data-line="18"/);
  });

  it('shows the new contract fields when present: initiator, call sites, explanations, fix variant', () => {
    const d = sample();
    d.initiator = {
      rank: 5,
      strategy: 'first_error',
      why: 'Rank 5 failed first.',
      candidates: [5],
      agreeing: ['odd_value_out'],
    };
    d.root_cause!.call_sites = [{ rank: 1, file: '/w/train.py', line: 40, func: 'step', collective: 'all_reduce' }];
    (d.root_cause!.fix as { variant?: unknown }).variant = { id: 'expandable-segments', why: 'fragmented' };
    d.explanations = [
      {
        cause: { kind: 'finding', signature: 'cuda-oom', rank: 5, path: 'sample.log', line: 18 },
        effect: { kind: 'finding', signature: 'nccl-watchdog-timeout', rank: 0, path: 'sample.log', line: 20 },
        rule: 'cause_explains_watchdogs',
        why: 'the watchdog fired after rank 5 died',
      },
    ];
    const out = renderReportHtml(d, ctx);
    assert.match(out, /<li>Rank 5 failed first. <span class="muted">\(agreeing: odd_value_out\)<\/span><\/li>/);
    assert.match(out, /<li>rank 1: <code>train.py:40<\/code> in step <span class="muted">\(all_reduce\)<\/span><\/li>/);
    assert.match(out, /<span class="badge" title="fragmented">fix: expandable-segments<\/span>/);
    assert.match(out, /Why each failure is collateral \(1 link\)/);
    assert.match(
      out,
      /rank 5: cuda-oom \(<a [^>]*data-line="18"[^>]*>sample.log:18<\/a>\) → rank 0: nccl-watchdog-timeout/,
    );
  });

  it('draws training curves from metrics with the bundled charts script, onsets linked to their line', () => {
    const d = sample();
    d.metrics = [
      {
        name: 'loss',
        rank: 0,
        points: [
          [1, 2.5],
          [2, 2.4],
          [3, 'nan'],
        ],
        onsets: [{ kind: 'nan', step: 3, rank: 0, line: 9, path: 'sample.log', why: 'loss became NaN </script>' }],
      },
      {
        name: 'loss',
        rank: 1,
        points: [
          [1, 2.6],
          [2, 2.5],
          [3, 2.4],
        ],
        onsets: [],
      },
    ];
    const chartsCtx = {
      ...ctx,
      chartsScriptUri: 'vscode-webview://x/charts.js',
      chartsStyleUri: 'vscode-webview://x/charts.css',
    };
    const out = renderReportHtml(d, chartsCtx);
    assert.match(out, /<figure class="chart" data-metric="loss"><figcaption>loss<\/figcaption>/);
    assert.match(out, /<script nonce="N0nce" src="vscode-webview:\/\/x\/charts.js"><\/script>/);
    assert.match(
      out,
      /nan at step 3 on rank 0: loss became NaN &lt;\/script&gt; <a href="#" class="evidence-link" data-path="sample.log" data-line="9"/,
    );
    const json = out.match(/<script type="application\/json" id="metrics-data">(.*?)<\/script>/)![1];
    assert.ok(!json.includes('</'), 'no tag can close the data block');
    assert.equal(JSON.parse(json)[0].points[2][1], 'nan');
    // Absent metrics (older engines): no section, no script.
    assert.doesNotMatch(renderReportHtml(sample(), chartsCtx), /charts\.js|Training curves/);
  });
});

describe('renderEntryHtml', () => {
  it('renders an entry with related links', () => {
    const out = renderEntryHtml(
      {
        id: 'cuda-oom',
        title: 'CUDA out of memory',
        failure_class: 'cuda-oom',
        entry: { summary: 'S', mechanism: 'M', symptoms: [{ text: 'T', meaning: 'X' }] },
        fix: { steps: ['one'], code: { pytorch: 'x = 1\n' } },
        verify: 'torchrun train.py',
        related: ['nccl-watchdog-timeout'],
      },
      ctx,
    );
    assert.match(out, /<h1>CUDA out of memory<\/h1>/);
    assert.match(out, /data-signature="nccl-watchdog-timeout"/);
    assert.match(
      out,
      /<details class="code-block" open><summary><span class="stack">PyTorch<\/span> <span class="muted">\(default\)<\/span><\/summary><div class="code-head"><button class="copy" data-copy-target="blk1"[^>]*>Copy<\/button><\/div><pre><code id="blk1">x = 1<\/code><\/pre>/,
    );
    assert.match(out, /<code id="blk2">torchrun train.py<\/code>/);
    // references are links the extension opens in the browser (data-url), other text stays text
    const refs = renderEntryHtml(
      { id: 'cuda-oom', references: ['https://pytorch.org/docs/stable/notes/cuda.html', 'NCCL 2.18 release notes'] },
      ctx,
    );
    assert.match(
      refs,
      /<li><a href="#" class="ref-link" data-url="https:\/\/pytorch.org\/docs\/stable\/notes\/cuda.html" title="Open in the browser">https:\/\/pytorch.org\/docs\/stable\/notes\/cuda.html<\/a><\/li><li><code>NCCL 2.18 release notes<\/code><\/li>/,
    );
    // its tab is told apart from the report of the same signature (titled by the signature's title)
    assert.match(out, /<title>rootrank entry: cuda-oom<\/title>/);
    assert.equal(entryTitle({ id: 'user-code-exception' }), 'rootrank entry: user-code-exception');
  });
});

describe('bestFrameFile', () => {
  it("picks the workspace file with the longest tail of the frame's path", () => {
    const files = ['/ws/tools/data.py', '/ws/src/proj/data.py', '/ws/proj/other.py'];
    assert.equal(bestFrameFile('/home/user/src/proj/data.py', files), '/ws/src/proj/data.py');
    assert.equal(bestFrameFile('C:\\Users\\me\\tools\\data.py', files), '/ws/tools/data.py');
    assert.equal(bestFrameFile('/home/user/proj/train.py', files), undefined);
    assert.equal(frameFileName('C:\\Users\\me\\tools\\data.py'), 'data.py');
  });

  it("renders the user's frame as a link the page turns into an open-the-frame message", () => {
    const page = renderReportHtml(sample(), ctx);
    assert.match(
      page,
      /<a href="#" class="frame-link" data-frame="\/workspace\/llm\/model.py" data-line="97" title="Open \/workspace\/llm\/model.py:97 in the workspace"><code>model.py:97<\/code><\/a>/,
    );
  });
});
