/**
 * Finding the Python that runs the bundled server: the `rootrank.interpreter` setting, else
 * the Python extension's active environment when that extension is installed (never
 * required), else `python3` (`py -3` on Windows) on PATH. The first candidate that exists is
 * probed for its version; below {@link PYTHON_FLOOR} it is refused with one message.
 */
import { execFile } from 'node:child_process';
import * as vscode from 'vscode';
import { floorLabel, meetsFloor, parseProbe, PythonInfo, VERSION_PROBE } from './pythonVersion';

/** A resolved interpreter. `command` + `args` start Python. */
export interface Interpreter extends PythonInfo {
  command: string;
  args: string[];
  /** Where it came from: `setting`, `python-extension` or `path`. */
  source: 'setting' | 'python-extension' | 'path';
}

/** Why no usable interpreter was found; `message` is what the user sees. */
export class InterpreterError extends Error {}

function probe(command: string, args: string[]): Promise<PythonInfo> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      [...args, '-I', '-c', VERSION_PROBE],
      { timeout: 15_000, windowsHide: true },
      (error, stdout, stderr) => {
        if (error) {
          reject(new Error(`${command}: ${(stderr || error.message).trim().split('\n').pop()}`));
          return;
        }
        try {
          resolve(parseProbe(stdout));
        } catch (e) {
          reject(e);
        }
      },
    );
  });
}

async function fromPythonExtension(
  resource: vscode.Uri | undefined,
  log: (m: string) => void,
): Promise<string | undefined> {
  if (!vscode.extensions.getExtension('ms-python.python')) {
    return undefined;
  }
  try {
    const { PythonExtension } = await import('@vscode/python-extension');
    const api = await PythonExtension.api();
    const active = api.environments.getActiveEnvironmentPath(resource);
    const env = await api.environments.resolveEnvironment(active);
    return env?.executable.uri?.fsPath;
  } catch (e) {
    log(`The Python extension did not give an environment: ${e instanceof Error ? e.message : String(e)}`);
    return undefined;
  }
}

/**
 * Resolve and probe the interpreter.
 *
 * @throws InterpreterError with a message that says what to do (missing, too old, broken).
 */
export async function resolveInterpreter(
  setting: string,
  resource: vscode.Uri | undefined,
  log: (m: string) => void,
): Promise<Interpreter> {
  const candidates: Array<Pick<Interpreter, 'command' | 'args' | 'source'>> = [];
  if (setting) {
    candidates.push({ command: setting, args: [], source: 'setting' });
  } else {
    const fromExt = await fromPythonExtension(resource, log);
    if (fromExt) {
      candidates.push({ command: fromExt, args: [], source: 'python-extension' });
    }
    if (process.platform === 'win32') {
      candidates.push({ command: 'py', args: ['-3'], source: 'path' }, { command: 'python', args: [], source: 'path' });
    } else {
      candidates.push(
        { command: 'python3', args: [], source: 'path' },
        { command: 'python', args: [], source: 'path' },
      );
    }
  }
  const problems: string[] = [];
  for (const c of candidates) {
    try {
      const info = await probe(c.command, c.args);
      log(
        `Python ${info.version.join('.')} at ${info.executable} (from ${c.source}: ${[c.command, ...c.args].join(' ')})`,
      );
      if (!meetsFloor(info.version)) {
        throw new InterpreterError(
          `rootrank needs Python ${floorLabel()} or newer, but ${[c.command, ...c.args].join(' ')} is Python ` +
            `${info.version.join('.')}. Set "rootrank.interpreter" to a newer Python (nothing needs to be installed in it).`,
        );
      }
      return { ...info, ...c };
    } catch (e) {
      if (e instanceof InterpreterError) {
        throw e;
      }
      problems.push(e instanceof Error ? e.message : String(e));
      if (c.source === 'setting') {
        break;
      }
    }
  }
  log(`No Python found: ${problems.join('; ')}`);
  throw new InterpreterError(
    setting
      ? `rootrank could not run the Python set in "rootrank.interpreter" (${setting}): ${problems[0] ?? 'not found'}. Point it at a Python ${floorLabel()}+ executable.`
      : `rootrank needs Python ${floorLabel()} or newer and found none (tried ${candidates
          .map((c) => [c.command, ...c.args].join(' '))
          .join(', ')}). Install Python or set "rootrank.interpreter" to its path.`,
  );
}
