#!/usr/bin/env node
// `npm run package`: bundle the Python server for one target, build the extension with esbuild
// (minified) and package rootrank-<version>.vsix with @vscode/vsce for that target.
// Target: --target <vsce target> or ROOTRANK_TARGET, default this machine's (linux-x64 here);
// --all: every target bundle-python.js builds, as rootrank-<version>-<target>.vsix.
// Per-target packages follow ruff-vscode: the compiled `regex` module differs per platform.
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const bin = (name) => path.join(ROOT, 'node_modules', '.bin', process.platform === 'win32' ? `${name}.cmd` : name);
const run = (cmd, args) => execFileSync(cmd, args, { cwd: ROOT, stdio: 'inherit' });
const bundler = path.join(__dirname, 'bundle-python.js');

/** Bundle, build and package one target into `out`; returns its size in bytes. */
function packageTarget(target, out) {
  const t0 = Date.now();
  run(process.execPath, [bundler, '--target', target]);
  run(process.execPath, [path.join(ROOT, 'esbuild.js'), '--production']);
  run(bin('vsce'), [
    'package', '--target', target, '--out', out, '--no-dependencies',
    '--readme-path', 'extension/README.md', '--skip-license', '--allow-missing-repository',
  ]);
  const size = fs.statSync(path.resolve(ROOT, out)).size;
  console.log(`package: ${out} (${target}) ${(size / 1024 / 1024).toFixed(2)} MB in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  if (size > 10 * 1024 * 1024) {
    console.error(`package: ${out} is over 10 MB`);
    process.exit(1);
  }
  return size;
}

if (process.argv.includes('--all')) {
  // Every target bundle-python.js knows, as rootrank-<version>-<target>.vsix.
  const targets = execFileSync(process.execPath, [bundler, '--list'], { encoding: 'utf8' }).trim().split('\n');
  for (const target of targets) {
    packageTarget(target, `rootrank-${pkg.version}-${target}.vsix`);
  }
} else {
  const i = process.argv.indexOf('--target');
  const target =
    (i >= 0 && process.argv[i + 1]) || process.env.ROOTRANK_TARGET || `${process.platform}-${process.arch === 'arm64' ? 'arm64' : 'x64'}`;
  packageTarget(target, process.env.ROOTRANK_VSIX || `rootrank-${pkg.version}.vsix`);
}
