/**
 * `engines.node` in package.json says which Node runs `npm ci`, the build and the tests, and it
 * must be honest: every Node it admits is admitted by every locked package (else `npm ci`
 * warns EBADENGINE, as it did on Node 22 before 22.17 and on Node 20 with
 * `@vscode/python-extension` 1.0.6, whose `>=22.17.0` came from its own build tools, not from
 * its code: 1.0.5 ships the same `out/main.js`), and every Node it refuses is refused by some
 * locked package (not narrower than needed). The extension itself runs on VS Code's Node
 * (20 in VS Code 1.100; esbuild targets node20), whatever `engines.node` says.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as semver from 'semver';

const ROOT = path.resolve(__dirname, '..', '..', '..', '..');
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
const range: string = manifest.engines.node;

/** Locked packages whose `engines.node` refuses `version` (npm's check: semver, prereleases included). */
function refusing(version: string): string[] {
  return Object.entries(lock.packages as Record<string, { engines?: { node?: string } }>)
    .filter(
      ([name, p]) => name && p.engines?.node && !semver.satisfies(version, p.engines.node, { includePrerelease: true }),
    )
    .map(([name, p]) => `${name.replace(/^node_modules\//, '')} (${p.engines?.node})`);
}

describe('engines.node', () => {
  it('admits Node 20 and Node 22, from the first release every locked package takes', () => {
    for (const version of ['20.18.1', '20.19.4', '22.0.0', '22.12.0', '22.16.0', '24.0.0']) {
      assert.ok(semver.satisfies(version, range), `${range} refuses ${version}`);
      assert.deepEqual(refusing(version), [], `npm ci on Node ${version} would warn EBADENGINE`);
    }
  });

  it('refuses only what some locked package refuses', () => {
    for (const version of ['18.20.0', '20.18.0', '21.7.0']) {
      assert.ok(!semver.satisfies(version, range), `${range} admits ${version}`);
      assert.notDeepEqual(refusing(version), [], `nothing locked needs more than Node ${version}`);
    }
  });

  it('leaves the VS Code engine as it was, equal to @types/vscode', () => {
    assert.equal(manifest.engines.vscode, '^1.100.0');
    assert.equal(`^${manifest.devDependencies['@types/vscode']}`, manifest.engines.vscode);
    assert.equal(lock.packages[''].engines.node, range); // the lockfile was written from this manifest
  });
});
