// Bundles extension/src/extension.ts (and vscode-languageclient) into dist/extension.js, and
// the report webview's charts (extension/src/webview/charts.ts + uPlot) into dist/webview/.
// `node esbuild.js --production` minifies; `--watch` rebuilds on change.
'use strict';
const esbuild = require('esbuild');

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

async function main() {
  const context = await esbuild.context({
    entryPoints: ['extension/src/extension.ts'],
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    outfile: 'dist/extension.js',
    external: ['vscode'],
    minify: production,
    sourcemap: !production,
    sourcesContent: false,
    logLevel: 'warning',
  });
  // The report webview's charts (uPlot and its CSS), bundled for the browser: the page loads
  // dist/webview/charts.js and charts.css from the extension; nothing is fetched at run time.
  const webview = await esbuild.context({
    entryPoints: ['extension/src/webview/charts.ts'],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2020',
    outfile: 'dist/webview/charts.js',
    minify: production,
    sourcemap: false,
    logLevel: 'warning',
  });
  if (watch) {
    await context.watch();
    await webview.watch();
  } else {
    await context.rebuild();
    await webview.rebuild();
    await context.dispose();
    await webview.dispose();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
