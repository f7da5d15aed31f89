/**
 * Parsing and checking the interpreter's version. Pure (no `vscode` import).
 */

/** The oldest Python the bundled server supports (pyproject `requires-python = ">=3.10"`). */
export const PYTHON_FLOOR: readonly [number, number] = [3, 10];

/** The code the extension runs to learn the interpreter's version and executable. */
export const VERSION_PROBE =
  'import sys, json; print(json.dumps({"version": list(sys.version_info[:3]), "executable": sys.executable, "implementation": sys.implementation.name}))';

/** What {@link VERSION_PROBE} prints. */
export interface PythonInfo {
  version: [number, number, number];
  executable: string;
  implementation: string;
}

/**
 * Parse the probe's output (the last non-empty line, JSON).
 *
 * @throws Error when the output is not the probe's JSON.
 */
export function parseProbe(stdout: string): PythonInfo {
  const line = stdout.trim().split(/\r?\n/).pop() ?? '';
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new Error(`unexpected output from the interpreter: ${JSON.stringify(line.slice(0, 200))}`);
  }
  const v = value as Partial<PythonInfo>;
  if (!Array.isArray(v.version) || v.version.length < 2 || !v.version.every((n) => Number.isInteger(n))) {
    throw new Error(`unexpected output from the interpreter: ${JSON.stringify(line.slice(0, 200))}`);
  }
  return {
    version: [v.version[0], v.version[1], v.version[2] ?? 0],
    executable: String(v.executable ?? ''),
    implementation: String(v.implementation ?? 'cpython'),
  };
}

/** Whether `version` is at least {@link PYTHON_FLOOR}. */
export function meetsFloor(version: readonly number[]): boolean {
  const [major, minor] = version;
  return major > PYTHON_FLOOR[0] || (major === PYTHON_FLOOR[0] && minor >= PYTHON_FLOOR[1]);
}

/** "3.10" */
export function floorLabel(): string {
  return PYTHON_FLOOR.join('.');
}
