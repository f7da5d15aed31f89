/**
 * The end-to-end tests' entry (extensionTestsPath): runs every `*.e2e.js` beside this file
 * with mocha inside the real extension host, like @vscode/test-electron's runner.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import Mocha from 'mocha';

/** Called by the workbench; rejects when a test failed. */
export function run(): Promise<void> {
  const mocha = new Mocha({ ui: 'bdd', timeout: 90_000, color: false, reporter: 'spec' });
  for (const file of fs
    .readdirSync(__dirname)
    .filter((f) => f.endsWith('.e2e.js'))
    .sort()) {
    mocha.addFile(path.join(__dirname, file));
  }
  return new Promise((resolve, reject) => {
    const runner = mocha.run((failures) => {
      console.log(`[e2e-result] ${runner.stats?.passes ?? 0} passed, ${failures} failed`);
      if (failures > 0) {
        reject(new Error(`${failures} end-to-end tests failed`));
      } else {
        resolve();
      }
    });
  });
}
