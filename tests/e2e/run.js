// Drives a real VS Code (code-server 4.100.3) in headless Chromium with playwright-core and runs
// the extension-host tests (out/tests/e2e/suite) through the workbench's `payload` URL
// parameter (the workbench calls codeAutomationExit(code) when the tests end). It also takes the
// screenshots the tests ask for: a console line "[e2e-shot] NAME" -> ARTIFACTS/NAME.png, then
// ARTIFACTS/NAME.png.done; and "[e2e-probe] NAME WIDTH [TEXT]" measures the report webview's DOM
// at WIDTH px -> ARTIFACTS/NAME.json (WIDTH 0: waits until the webview showing TEXT is drawn, then
// takes the screenshot only).
// Env: CS_URL, WORKSPACE, EXT_DEV_PATH, EXT_TESTS_PATH, ARTIFACTS, PW_CORE, CHROMIUM, E2E_TIMEOUT_MS.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { chromium } = require(process.env.PW_CORE || 'playwright-core');

const CS_URL = process.env.CS_URL || 'http://127.0.0.1:8765';
const AUTH = new URL(CS_URL).host;
const { WORKSPACE, EXT_DEV_PATH, EXT_TESTS_PATH } = process.env;
const ARTIFACTS = process.env.ARTIFACTS || path.resolve('test-artifacts');
const TIMEOUT = Number(process.env.E2E_TIMEOUT_MS || 300000);
const t0 = Date.now();
const log = (...a) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);

/** The webview frame that shows the report (it holds `main.report`), or undefined. */
async function reportFrame(page, text) {
  for (const frame of page.frames()) {
    const found = await frame
      .evaluate((t) => {
        const main = document.querySelector(t ? 'main.report' : 'main.report:not(.entry)');
        return Boolean(main && (!t || main.innerText.includes(t.replace(/_/g, ' '))));
      }, text)
      .catch(() => false);
    if (found) return frame;
  }
  return undefined;
}

/**
 * Size the window so the report webview is about `width` px wide (the report alone in the
 * editor area, side bar closed), then read from its DOM: its width, whether the page or the
 * timeline scrolls sideways, the row of the initiating mark, whether that row is emphasised,
 * whether every mark lies inside its lane, and the tooltip shown when the initiating mark has
 * keyboard focus. Screenshot NAME.png at that size; the window size is restored after.
 */
async function probeReport(page, name, width, text) {
  const before = page.viewportSize();
  let frame0;
  for (let i = 0; i < 60 && !frame0; i++) {
    frame0 = await reportFrame(page, text);
    if (!frame0) await page.waitForTimeout(250);
  }
  if (frame0 && !width) {
    // Only wait until the page (the one showing TEXT, `_` for spaces) is drawn, then screenshot it.
    await page.waitForTimeout(500);
    await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`) });
    fs.writeFileSync(path.join(ARTIFACTS, `${name}.json`), JSON.stringify({ innerWidth: await frame0.evaluate(() => window.innerWidth) }));
    log(`screenshot ${name} (webview drawn)`);
    return;
  }
  if (!frame0) throw new Error(`no report webview found among frames: ${page.frames().map((f) => f.url().slice(0, 80)).join(' | ')}`);
  const inner0 = await frame0.evaluate(() => window.innerWidth);
  await page.setViewportSize({ width: Math.max(400, before.width - (inner0 - width)), height: before.height });
  await page.waitForTimeout(1500);
  const frame = (await reportFrame(page)) || frame0;
  const result = await frame.evaluate(() => {
    const doc = document.documentElement;
    const tl = document.querySelector('.tl');
    const mark = document.querySelector('.tl-mark.tl-initiating');
    const row = mark && mark.closest('.tl-row');
    const lanes = [...document.querySelectorAll('.tl-lane')];
    const outside = [...document.querySelectorAll('.tl .tl-mark')].filter((m) => {
      const lane = m.closest('.tl-lane').getBoundingClientRect();
      const r = m.getBoundingClientRect();
      return r.left < lane.left - 1 || r.right > lane.right + 1;
    }).length;
    let tip = null;
    if (mark) {
      mark.focus();
      const t = mark.nextElementSibling;
      const r = t.getBoundingClientRect();
      tip = { display: getComputedStyle(t).display, text: t.innerText, left: r.left, right: r.right, role: t.getAttribute('role') };
    }
    const rowLabel = row && row.querySelector('.tl-rank');
    const collateral = document.querySelector('.tl-collateral .tl-shape');
    return {
      innerWidth: window.innerWidth,
      pageScrollWidth: doc.scrollWidth,
      pageClientWidth: doc.clientWidth,
      timelineScrollWidth: tl ? tl.scrollWidth : null,
      timelineClientWidth: tl ? tl.clientWidth : null,
      initiatingRowRank: row ? row.dataset.rank : null,
      initiatingRowLabel: rowLabel ? rowLabel.textContent : null,
      initiatingRowEmphasised: row ? row.classList.contains('tl-row-initiating') : false,
      initiatingRowBackground: row ? getComputedStyle(row.querySelector('.tl-lane')).backgroundColor : null,
      lanes: lanes.length,
      marksOutsideLane: outside,
      collateralBorder: collateral ? getComputedStyle(collateral).borderTopColor : null,
      collateralBackground: collateral ? getComputedStyle(collateral).backgroundColor : null,
      bodyBackground: getComputedStyle(document.body).backgroundColor,
      tip,
      firstHeading: (document.querySelector('main h1') || {}).textContent || null,
      charts: [...document.querySelectorAll('figure.chart')].map((f) => ({
        metric: f.dataset.metric,
        canvases: f.querySelectorAll('.uplot canvas').length,
        width: f.querySelector('.chart-body') ? f.querySelector('.chart-body').getBoundingClientRect().width : 0,
        label: f.querySelector('.chart-body') ? f.querySelector('.chart-body').getAttribute('aria-label') : null,
      })),
      bodyText: document.body.innerText,
    };
  });
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`) });
  fs.writeFileSync(path.join(ARTIFACTS, `${name}.json`), JSON.stringify(result, null, 2));
  log(`probe ${name}: webview ${result.innerWidth} px, page scroll ${result.pageScrollWidth}/${result.pageClientWidth}`);
  await page.setViewportSize(before);
  await page.waitForTimeout(500);
}

(async () => {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'rootrank-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1600, height: 1000 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
  const page = context.pages()[0] || (await context.newPage());
  let resolveExit;
  const exited = new Promise((r) => (resolveExit = r));
  await page.exposeFunction('codeAutomationExit', (code) => resolveExit(code));
  const consoleLog = fs.createWriteStream(path.join(ARTIFACTS, 'e2e-console.log'));
  let shots = Promise.resolve();
  let summary = 'e2e: 0 passed, 1 failed';
  page.on('console', (m) => {
    const text = m.text().replace(/%c/g, '').replace(/color: \S+/g, '').trim();
    consoleLog.write(text + '\n');
    if (!text.includes('[e2e-') && !/^\s*(✔|✓|\d+\)|passing|failing)/.test(text) && !text.includes('rootrank extension')) return;
    const result = text.match(/\[e2e-result\] (\d+) passed, (\d+) failed/);
    if (result) {
      summary = `e2e: ${result[1]} passed, ${result[2]} failed`;
    }
    // "[e2e-probe] NAME WIDTH": measure the report webview as a person sees it (see probeReport),
    // with the window sized so the webview is about WIDTH px wide; -> ARTIFACTS/NAME.json.
    const probe = text.match(/\[e2e-probe\] ([\w-]+) (\d+)(?: (\S+))?/);
    if (probe) {
      const [, name, width, text] = probe;
      shots = shots.then(() => probeReport(page, name, Number(width), text)).catch((e) => {
        fs.writeFileSync(path.join(ARTIFACTS, `${name}.json`), JSON.stringify({ error: e.message }));
        log(`probe ${name} failed: ${e.message}`);
      });
      return;
    }
    const shot = text.match(/\[e2e-shot\] ([\w-]+)/);
    if (shot) {
      const name = shot[1];
      shots = shots.then(async () => {
        const file = path.join(ARTIFACTS, `${name}.png`);
        await page.screenshot({ path: file });
        fs.writeFileSync(`${file}.done`, '');
        log(`screenshot ${path.relative(process.cwd(), file)}`);
      }).catch((e) => log(`screenshot ${name} failed: ${e.message}`));
      return;
    }
    log(text.slice(0, 400));
  });
  const payload = JSON.stringify([
    ['extensionDevelopmentPath', `vscode-remote://${AUTH}${EXT_DEV_PATH}`],
    ['extensionTestsPath', `vscode-remote://${AUTH}${EXT_TESTS_PATH}`],
  ]);
  const url = `${CS_URL}/?folder=${encodeURIComponent(WORKSPACE)}&payload=${encodeURIComponent(payload)}`;
  log('open', url);
  await page.goto(url, { waitUntil: 'domcontentloaded' });
  const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('timeout'), TIMEOUT))]);
  log('extension tests exit code:', code);
  // The plain closing line CI reads ("N passed, N failed").
  console.log(code === 'timeout' ? 'e2e: 0 passed, 1 failed' : summary);
  if (code !== 0) {
    await page.screenshot({ path: path.join(ARTIFACTS, 'failure.png') }).catch(() => undefined);
  }
  await shots;
  consoleLog.end();
  await context.close();
  fs.rmSync(profile, { recursive: true, force: true });
  process.exit(code === 0 ? 0 : 1);
})().catch((e) => {
  console.error(e);
  process.exit(2);
});
