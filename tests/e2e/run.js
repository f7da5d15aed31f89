// Drives a real VS Code (code-server 4.100.3) in headless Chromium with playwright-core and runs
// the extension-host tests (out/tests/e2e/suite) through the workbench's `payload` URL
// parameter (the workbench calls codeAutomationExit(code) when the tests end). It also takes the screenshots the tests ask
// for: a console line "[e2e-shot] NAME" -> ARTIFACTS/NAME.png, then ARTIFACTS/NAME.png.done.
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
