/**
 * The live events `rootrank watch --format json` prints, one JSON object per line
 * (`server/rootrank/live/events.py`), and the state of one watched job they add up to.
 * No `vscode` import: the unit tests run this in plain Node.
 */
import type { Diagnosis } from './report/diagnosis';

/** One rank's last step: `time` in seconds since the epoch, `line` 1-based in `path`. */
export interface RankStep {
  rank: number | null;
  step: number;
  total?: number | null;
  epoch?: number | null;
  time: number;
  path?: string;
  line?: number;
}

/** An alarm the job showed was none (`withdrawn`, and each of `healthy`'s list). */
export interface WithdrawnAlarm {
  alarm: 'stall' | 'failure' | string;
  alarm_time: number;
  what: string;
  suspect_rank?: number | null;
  why: string;
}

/** A live event; fields beyond these are ignored. */
export interface LiveEvent {
  event: 'stall' | 'straggler' | 'failure' | 'progress' | 'exit' | 'withdrawn' | 'healthy' | string;
  time: number;
  suspect_rank?: number | null;
  why?: string;
  ranks?: RankStep[];
  diagnosis?: Diagnosis;
  final?: boolean;
  code?: number;
  /** `withdrawn`: which alarm (`stall`, `failure`). */
  alarm?: string;
  /** `healthy`: every alarm of the job, each with why it was withdrawn. */
  withdrawn?: WithdrawnAlarm[];
  /** `healthy`: the command's exit code (`rootrank run`), null under `watch`. */
  exit_code?: number | null;
}

/** Splits a byte stream's text into JSON event lines; keeps an unfinished line for later. */
export class EventLineParser {
  private rest = '';

  /** Add text; returns the events of the lines it completed (non-JSON lines are skipped). */
  push(chunk: string): LiveEvent[] {
    this.rest += chunk;
    const lines = this.rest.split('\n');
    this.rest = lines.pop() ?? '';
    if (this.rest.length > 64 * 1024 * 1024) {
      this.rest = ''; // a runaway line without a newline: drop it rather than grow forever
    }
    const out: LiveEvent[] = [];
    for (const line of lines) {
      const t = line.trim();
      if (!t.startsWith('{')) {
        continue;
      }
      try {
        const e = JSON.parse(t) as LiveEvent;
        if (e && typeof e.event === 'string') {
          out.push(e);
        }
      } catch {
        // not an event line
      }
    }
    return out;
  }
}

/** What one watched job looks like now. */
export interface JobState {
  /** `watching` (no verdict), `stalled`, `failed`, or `ended` (the command finished). */
  phase: 'watching' | 'stalled' | 'failed' | 'ended';
  ranks: RankStep[];
  suspectRank: number | null;
  why: string;
  diagnosis?: Diagnosis;
  exitCode?: number;
  /** Alarms withdrawn when the job ended healthy (`healthy` event). */
  withdrawn?: number;
}

/** The state before any event. */
export function initialState(): JobState {
  return { phase: 'watching', ranks: [], suspectRank: null, why: '' };
}

/** The state after `e`. A failure outranks a stall; progress after a stall ends it. */
export function reduce(state: JobState, e: LiveEvent): JobState {
  const ranks = e.ranks ?? state.ranks;
  switch (e.event) {
    case 'progress':
      return { ...state, ranks, phase: state.phase === 'stalled' ? 'watching' : state.phase };
    case 'stall':
      if (state.phase === 'failed') {
        return { ...state, ranks };
      }
      return { ...state, ranks, phase: 'stalled', suspectRank: e.suspect_rank ?? null, why: e.why ?? '' };
    case 'straggler':
      return { ...state, ranks, why: state.phase === 'watching' ? (e.why ?? '') : state.why };
    case 'failure':
      if (!e.diagnosis?.root_cause) {
        return state;
      }
      return {
        ...state,
        phase: 'failed',
        diagnosis: e.diagnosis,
        suspectRank: e.diagnosis.initiating_rank ?? null,
        why: e.diagnosis.root_cause.title,
      };
    case 'withdrawn':
      // an earlier alarm was none: a stall ended, a failure the job survived
      if ((e.alarm === 'stall' && state.phase === 'stalled') || (e.alarm === 'failure' && state.phase === 'failed')) {
        return { ...state, phase: 'watching', suspectRank: null, diagnosis: undefined, why: e.why ?? '' };
      }
      return state;
    case 'healthy':
      return {
        ...state,
        phase: 'ended',
        suspectRank: null,
        diagnosis: undefined,
        exitCode: e.exit_code ?? state.exitCode,
        withdrawn: e.withdrawn?.length ?? 0,
        why: `finished healthy; withdrawn: ${(e.withdrawn ?? []).map((a) => `${a.alarm} (${a.why})`).join('; ')}`,
      };
    case 'exit':
      return { ...state, exitCode: e.code, phase: state.phase === 'watching' ? 'ended' : state.phase };
    default:
      return state;
  }
}

/** The highest step any rank reached, or undefined before any progress. */
export function lastStep(ranks: RankStep[]): number | undefined {
  return ranks.length ? Math.max(...ranks.map((r) => r.step)) : undefined;
}

/** The ranks as `0-3,5`, or `''` when none is named. */
export function rankList(ranks: Array<number | null>): string {
  const named = [...new Set(ranks.filter((r): r is number => r !== null))].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < named.length;) {
    let j = i;
    while (j + 1 < named.length && named[j + 1] === named[j] + 1) {
      j++;
    }
    parts.push(i === j ? `${named[i]}` : `${named[i]}-${named[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

/** The status bar's text (with a codicon) for a job named `name`. */
export function statusText(state: JobState): string {
  const step = lastStep(state.ranks);
  const named = state.ranks.filter((r) => r.rank !== null).length;
  const progress = [
    step !== undefined ? `step ${step}` : 'no step yet',
    named ? `${named} rank${named === 1 ? '' : 's'}` : '',
  ]
    .filter(Boolean)
    .join(' · ');
  const on = state.suspectRank !== null ? ` (rank ${state.suspectRank})` : '';
  switch (state.phase) {
    case 'stalled':
      return `$(warning) rootrank: stalled${on} · ${progress}`;
    case 'failed':
      return `$(error) rootrank: failed${on}`;
    case 'ended':
      return `$(check) rootrank: ended${state.exitCode !== undefined ? ` (exit ${state.exitCode})` : ''}${
        state.withdrawn ? ` · healthy, ${state.withdrawn} alarm${state.withdrawn === 1 ? '' : 's'} withdrawn` : ''
      } · ${progress}`;
    default:
      return `$(pulse) rootrank: ${progress}`;
  }
}

/** The status bar's tooltip: every rank's last step. */
export function statusTooltip(name: string, state: JobState, now = Date.now() / 1000): string {
  const lines = [`rootrank is watching ${name}`];
  if (state.why) {
    lines.push(state.why);
  }
  for (const r of state.ranks.slice(0, 16)) {
    const total = r.total ? `/${r.total}` : '';
    lines.push(
      `${r.rank === null ? 'job' : `rank ${r.rank}`}: step ${r.step}${total}, ${Math.max(0, Math.round(now - r.time))} s ago`,
    );
  }
  if (state.ranks.length > 16) {
    lines.push(`... and ${state.ranks.length - 16} more ranks`);
  }
  return lines.join('\n');
}

/** Commands worth watching live: launchers and Python (the setting can widen it). */
export const DEFAULT_LIVE_COMMANDS =
  '\\b(torchrun|deepspeed|accelerate|python[0-9.]*|srun|mpirun|mpiexec|rootrank|bash|sh)\\b|\\.(sh|py)\\b';

/** Whether `commandLine` should be watched, by the `rootrank.live.commands` pattern. */
export function shouldWatch(commandLine: string, pattern: string = DEFAULT_LIVE_COMMANDS): boolean {
  try {
    return new RegExp(pattern).test(commandLine);
  } catch {
    return new RegExp(DEFAULT_LIVE_COMMANDS).test(commandLine);
  }
}
