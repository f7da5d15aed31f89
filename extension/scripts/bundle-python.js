#!/usr/bin/env node
// Bundles the Python language server into dist/python/ for one .vsix target:
//   dist/python/rootrank_server.py   the launcher (extension/python/rootrank_server.py)
//   dist/python/libs/                rootrank (server/rootrank + signatures/ as rootrank/signatures,
//                                    + rootrank/library.json, the library's built form)
//                                    + pinned dependencies (extension/python/requirements.txt),
//                                    installed with `pip install --target` for Python 3.10 wheels of
//                                    the target platform, then the compiled packages' extension
//                                    modules (regex, ahocorasick_rs) added for every CPython in PYTHONS
//                                    (one file each, tagged by ABI, so one package serves them all)
//   dist/python/manifest.json        {target, pythons, regex}
// Usage: node extension/scripts/bundle-python.js [--target linux-x64] [--python python3]
// Needs network access to PyPI at package time (never at run time).
'use strict';
const { execFileSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const OUT = path.join(ROOT, 'dist', 'python');
const LIBS = path.join(OUT, 'libs');
const REQUIREMENTS = path.join(ROOT, 'extension', 'python', 'requirements.txt');
/** CPython minor versions whose regex module goes in; 3.10 = pyproject's requires-python floor. */
const PYTHONS = ['3.10', '3.11', '3.12', '3.13', '3.14'];
/** vsce target -> pip --platform tags (the manylinux/macOS/Windows tags regex publishes wheels for). */
const PLATFORMS = {
  'linux-x64': ['manylinux2014_x86_64', 'manylinux_2_17_x86_64', 'manylinux_2_28_x86_64'],
  'linux-arm64': ['manylinux2014_aarch64', 'manylinux_2_17_aarch64', 'manylinux_2_28_aarch64'],
  'darwin-arm64': ['macosx_11_0_arm64'],
  'win32-x64': ['win_amd64'],
};
// Not built (checked on PyPI on 2026-11-29): darwin-x64 (the pinned regex has no Intel macOS
// wheel for CPython 3.14), win32-arm64 and alpine-x64 (ahocorasick-rs publishes no win_arm64 or
// musllinux wheels). Users there run the CLI from `pip install .` instead.

/** The vsce target of this machine (the default). */
function hostTarget() {
  const arch = process.arch === 'arm64' ? 'arm64' : 'x64';
  return `${process.platform}-${arch}`;
}

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

function pip(python, args) {
  execFileSync(python, ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-compile', '-q', ...args], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, PIP_NO_INPUT: '1' },
  });
}

function copyTree(from, to, skip) {
  fs.mkdirSync(to, { recursive: true });
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    if (skip(entry.name, entry.isDirectory())) continue;
    const src = path.join(from, entry.name);
    const dst = path.join(to, entry.name);
    if (entry.isDirectory()) copyTree(src, dst, skip);
    else fs.copyFileSync(src, dst);
  }
}

function removeMatching(dir, test) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (test(entry.name, entry.isDirectory())) fs.rmSync(p, { recursive: true, force: true });
    else if (entry.isDirectory()) removeMatching(p, test);
  }
}

/** An extension module's file name (CPython on Linux/macOS, or Windows). */
const EXTENSION_MODULE = /\.(cpython-\d+[^.]*\.so|cp\d+-[^.]*\.pyd)$/;

function listFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listFiles(path.join(dir, e.name)) : [path.join(dir, e.name)],
  );
}

/** Steps 1-3: pinned dependencies for the floor Python, plus the compiled modules for the others. */
function installDependencies(python, dest, platformArgs, compiled, anyPlatform) {
  // 1. dependencies for the floor Python (3.10): pure-Python packages plus 3.10 backports; the
  //    `# any-platform` pins come from this machine's wheels (only their pure-Python part stays).
  const [floorMajor, floorMinor] = PYTHONS[0].split('.');
  const floor = ['--only-binary=:all:', '--implementation', 'cp', '--python-version', PYTHONS[0], '--abi', `cp${floorMajor}${floorMinor}`];
  const pins = fs.readFileSync(REQUIREMENTS, 'utf8').split('\n').filter((l) => /^[A-Za-z]/.test(l) && !/#\s*any-platform/.test(l));
  const targetRequirements = path.join(dest, '..', `requirements-${path.basename(dest)}.txt`);
  fs.writeFileSync(targetRequirements, pins.join('\n') + '\n');
  pip(python, ['--target', dest, ...floor, ...platformArgs, '-r', targetRequirements]);
  fs.rmSync(targetRequirements);
  if (anyPlatform.length) {
    pip(python, ['--target', dest, '--no-deps', ...floor, ...anyPlatform]);
  }

  // 2. the compiled packages' extension modules for each other CPython: their file names carry
  //    the ABI tag (_regex.cpython-312-x86_64-linux-gnu.so, ahocorasick_rs.cp312-win_amd64.pyd), so
  //    the modules of several Pythons sit side by side and each Python imports its own.
  const scratch = path.join(dest, '..', 'scratch');
  for (const version of PYTHONS.slice(1)) {
    const tag = `cp${version.replace('.', '')}`;
    const dir = path.join(scratch, tag);
    fs.rmSync(dir, { recursive: true, force: true });
    pip(python, [
      '--target', dir, '--no-deps', '--only-binary=:all:', '--implementation', 'cp',
      '--python-version', version, '--abi', tag, ...platformArgs, ...compiled,
    ]);
    const modules = listFiles(dir).filter((f) => EXTENSION_MODULE.test(path.basename(f)) && path.basename(f).includes(tag.slice(2)));
    if (modules.length < compiled.length) {
      throw new Error(`expected an extension module per compiled package for ${tag}, found ${modules.join(', ') || 'none'}`);
    }
    for (const file of modules) {
      const to = path.join(dest, path.relative(dir, file));
      fs.mkdirSync(path.dirname(to), { recursive: true });
      fs.copyFileSync(file, to);
    }
  }
  fs.rmSync(scratch, { recursive: true, force: true });

  // 3. trim: tests, caches, console scripts, and PyYAML's optional libyaml binding (built for one
  //    Python and, as an `any-platform` pin, for this machine only; rootrank falls back to the
  //    pure-Python SafeLoader on every version).
  removeMatching(dest, (name, isDir) =>
    (isDir && (name === '__pycache__' || name === 'tests' || name === 'bin')) || /^_yaml\..*\.(so|pyd)$/.test(name),
  );

}

const normalise = (name) => name.toLowerCase().replace(/[-_.]+/g, '-');

/**
 * The names rootrank needs at run time: pyproject's `dependencies` and the `lsp` extra. Every
 * one must be pinned in requirements.txt, or the bundled server would miss an import.
 */
function requiredByPyproject() {
  const text = fs.readFileSync(path.join(ROOT, 'pyproject.toml'), 'utf8');
  const lists = [/^dependencies\s*=\s*\[([^\]]*)\]/m, /^lsp\s*=\s*\[([^\]]*)\]/m].map((re) => (text.match(re) || [])[1] || '');
  return [...lists.join('\n').matchAll(/["']([^"']+)["']/g)].map((m) => normalise(m[1].split(/[<>=!~\[;\s]/)[0]));
}

function main() {
  if (process.argv.includes('--list')) {
    console.log(Object.keys(PLATFORMS).join('\n'));
    return;
  }
  const target = arg('--target', process.env.ROOTRANK_TARGET || hostTarget());
  const python = arg('--python', process.env.ROOTRANK_BUILD_PYTHON || (process.platform === 'win32' ? 'python' : 'python3'));
  const platforms = PLATFORMS[target];
  if (!platforms) {
    throw new Error(`unknown target ${target}; one of ${Object.keys(PLATFORMS).join(', ')}`);
  }
  const platformArgs = platforms.flatMap((p) => ['--platform', p]);
  const started = Date.now();
  fs.rmSync(OUT, { recursive: true, force: true });
  fs.mkdirSync(LIBS, { recursive: true });

  // Steps 1-3 depend only on the pins, the Pythons and the target: cached in dist/python-deps/.
  const key = crypto.createHash('sha256').update(JSON.stringify([fs.readFileSync(REQUIREMENTS, 'utf8'), PYTHONS, target, platforms])).digest('hex').slice(0, 16);
  const cache = path.join(ROOT, 'dist', 'python-deps', `${target}-${key}`);
  const pins = fs.readFileSync(REQUIREMENTS, 'utf8').split('\n');
  const pinned = new Set(pins.filter((l) => /^[A-Za-z]/.test(l)).map((l) => normalise(l.split('==')[0].trim())));
  const missing = requiredByPyproject().filter((name) => !pinned.has(name));
  if (missing.length) {
    throw new Error(`pyproject.toml needs ${missing.join(', ')}: pin them in ${path.relative(ROOT, REQUIREMENTS)}`);
  }
  const compiled = pins.filter((l) => !l.trim().startsWith('#') && /#\s*compiled/.test(l)).map((l) => l.split('#')[0].trim());
  const anyPlatform = pins.filter((l) => !l.trim().startsWith('#') && /#\s*any-platform/.test(l)).map((l) => l.split('#')[0].trim());
  if (!fs.existsSync(path.join(cache, '.complete'))) {
    fs.rmSync(cache, { recursive: true, force: true });
    fs.mkdirSync(cache, { recursive: true });
    installDependencies(python, cache, platformArgs, compiled, anyPlatform);
    fs.writeFileSync(path.join(cache, '.complete'), '');
  } else {
    console.log(`bundle-python: dependencies from ${path.relative(ROOT, cache)}`);
  }
  copyTree(cache, LIBS, (name) => name === '.complete');

  // 4. rootrank itself, and the built-in library where rootrank.signatures.builtin_dir() finds it.
  copyTree(path.join(ROOT, 'server', 'rootrank'), path.join(LIBS, 'rootrank'), (name, isDir) =>
    isDir ? name === '__pycache__' : name.endsWith('.pyc'),
  );
  copyTree(path.join(ROOT, 'signatures'), path.join(LIBS, 'rootrank', 'signatures'), (name, isDir) =>
    isDir ? name === '__pycache__' : !/\.(ya?ml|py|json)$/.test(name),
  );
  // 5. the signature library's built form (rootrank/library.json: read at start instead of the
  //    YAML files, see rootrank.library_file), built from the copy just made, with its libs.
  const pkg = path.join(LIBS, 'rootrank');
  execFileSync(python, ['-m', 'rootrank.library_file', '--signatures', path.join(pkg, 'signatures'), '--out', path.join(pkg, 'library.json')], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, PYTHONPATH: LIBS, PYTHONDONTWRITEBYTECODE: '1' },
  });
  fs.copyFileSync(path.join(ROOT, 'extension', 'python', 'rootrank_server.py'), path.join(OUT, 'rootrank_server.py'));
  const manifest = { target, pythons: PYTHONS, compiled, platforms };
  fs.writeFileSync(path.join(OUT, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
  console.log(`bundle-python: ${target}, Python ${PYTHONS.join('/')}, ${((Date.now() - started) / 1000).toFixed(1)} s -> ${path.relative(ROOT, OUT)}`);
}

main();
