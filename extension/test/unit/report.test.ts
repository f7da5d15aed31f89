import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { asDiagnosis, Diagnosis, headline } from '../../src/report/diagnosis';
import { contentSecurityPolicy, renderEntryHtml, renderReportHtml, ranksLabel } from '../../src/report/html';

// A diagnosis made by the engine (rootrank.engine.diagnose_text) from extension/samples/torchrun-8gpu-oom.log.
const FIXTURE = path.resolve(__dirname, '../../../../extension/test/fixtures/torchrun-8gpu-oom.diagnosis.json');
const sample = (): Diagnosis => asDiagnosis(JSON.parse(fs.readFileSync(FIXTURE, 'utf8')));
const ctx = { cspSource: 'vscode-webview://x', nonce: 'N0nce', styleUri: 'vscode-webview://x/report.css', scriptUri: 'vscode-webview://x/report.js', canRun: true };

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
    assert.match(html, /confidence \d+%/);
    assert.match(html, /<p class="big">rank 5 on <strong>host-1<\/strong><\/p>/);
    assert.match(html, /Rank 5 hit &quot;CUDA out of memory in the caching allocator&quot; \(sample.log:18\)/);
  });

  it('lists the collateral with ranks, counts and links to their lines', () => {
    assert.match(html, /<td>0-4, 6, 7<\/td><td class="num">7<\/td>/);
    assert.match(html, /data-path="sample.log" data-line="19"/);
  });

  it('shows a legend for the kinds of mark drawn only', () => {
    assert.match(html, /<span class="key tl-initiating-key">initiating event<\/span><span class="key tl-collateral-key">collateral<\/span><\/div>/);
    assert.doesNotMatch(html, /tl-other-key/);
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
    assert.match(out, /<h1>No known failure found<\/h1>/);
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
    assert.match(out, /<pre><code id="blk1">x = 1<\/code><\/pre>/);
    assert.match(out, /<code id="blk2">torchrun train.py<\/code>/);
  });
});
