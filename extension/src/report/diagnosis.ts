/**
 * The `rootrank.diagnosis/1` JSON contract, as the language server's `rootrank.diagnose`
 * command and the CLI's `--format json` return it (source: `server/rootrank/model.py`,
 * `Diagnosis.to_dict()`). Lines are 1-based, columns 0-based code points, times are
 * seconds since the epoch. Every field a newer engine adds is ignored here.
 */

// Generated from schema/diagnosis.schema.json (npm run gen:types): the types every reader
// shares with the engine. The reader-side types below stay lenient where the extension also
// reads older engines' answers and library entries (fields optional, extra fields allowed);
// diagnosis.contract.ts checks at compile time that what the engine writes fits them.
import type { Collateral, Evidence } from './diagnosis.generated';
export type { Collateral, Evidence };

/** One signature matched on one rank (`Finding.to_dict()`). */
export interface Finding {
  signature: string;
  failure_class: string;
  title: string;
  role: 'cause' | 'symptom' | string;
  severity: 'error' | 'warning' | string;
  rank: number | null;
  host: string | null;
  /** Seconds since the epoch of the first occurrence, or null when the log has no timestamps. */
  time: number | null;
  count: number;
  captures: Record<string, string>;
  evidence: Evidence[];
  /** 0-based order of the first occurrence across all sources, when the engine sends it. */
  order?: number;
}

/** The fix of the root cause: steps and code per stack (`pytorch`, `hf`, `deepspeed`...). */
export interface Fix {
  steps?: string[];
  code?: Record<string, string>;
  /** Which fix variant the engine chose and why (newer engines). */
  variant?: { id: string; why?: string } | null;
}

/** A frame of the user's own code: `line` 1-based. */
export interface UserFrame {
  file: string;
  line: number;
  func?: string;
}

/** One rank's call site of a collective (newer engines). */
export interface CallSite {
  rank: number | null;
  file: string;
  line: number;
  func?: string;
  collective?: string | null;
}

/** An event an explanation points at (`line` 1-based). */
export interface EventRef {
  kind: string;
  signature: string | null;
  rank: number | null;
  path: string | null;
  line: number | null;
}

/** An edge the causal analysis drew: `cause` explains `effect` by `rule`. */
export interface Explanation {
  cause: EventRef;
  effect: EventRef;
  rule: string;
  why: string;
}

/** How the initiating rank was chosen (newer engines). */
export interface Initiator {
  rank: number | null;
  strategy: string | null;
  why: string;
  candidates?: number[];
  agreeing?: string[];
}

/** A change in a training curve (a NaN, a spike) at `step`, found on `path:line` (1-based). */
export interface MetricOnset {
  kind: string;
  step: number;
  rank: number | null;
  line: number;
  path: string;
  why: string;
}

/** One training curve: `points` are `[step, value]`, value a number or "nan"/"inf"/"-inf". */
export interface MetricSeries {
  name: string;
  rank: number | null;
  points: Array<[number, number | string]>;
  onsets?: MetricOnset[];
}

/** Per-rank training progress (newer engines). */
export interface Progress {
  ranks: Array<{ rank: number | null; step: number; time: number | null; path: string; line: number }>;
  end_time: number | null;
  silent_seconds: number | null;
  behind: number[];
}

/** The explaining finding, with the entry's fix, confirm checklist and verification command. */
export interface RootCause {
  signature: string;
  failure_class: string;
  title: string;
  /** 0..1 */
  confidence: number;
  rank: number | null;
  host: string | null;
  evidence: Evidence[];
  fix?: Fix | string[] | null;
  confirm?: string[];
  verify?: string | null;
  /** Related entries: `{id, title}` objects (strings from older engines). */
  related?: Array<RelatedEntry | string>;
  summary?: string;
  mechanism?: string;
  references?: string[];
  /** The innermost frame in the user's own code (newer engines; else read from `frames`). */
  user_frame?: UserFrame | null;
  call_sites?: CallSite[];
  [key: string]: unknown;
}

/** A related failure-library entry. */
export interface RelatedEntry {
  id: string;
  title?: string;
}

/** One event of the ordered timeline (fields optional: older engines send fewer). */
export interface TimelineEvent {
  rank?: number | null;
  host?: string | null;
  time?: number | null;
  order?: number;
  signature?: string;
  title?: string;
  failure_class?: string;
  role?: string;
  /** `root` (the root-cause finding), `collateral`, or `finding` (no root cause). */
  kind?: string;
  path?: string | null;
  line?: number;
  text?: string;
  initiating?: boolean;
  collateral?: boolean;
  [key: string]: unknown;
}

/** The whole answer for one log or one set of logs. */
export interface Diagnosis {
  schema: string;
  sources: string[];
  root_cause: RootCause | null;
  initiating_rank: number | null;
  initiating_host: string | null;
  reasoning: string[];
  collateral: Collateral[];
  findings: Finding[];
  unclassified: Finding | null;
  ranks: { seen?: number[]; hosts?: Record<string, string>; world_size?: number | null };
  stack?: string[];
  timeline: TimelineEvent[];
  lines_read?: number;
  warnings?: string[];
  /** Fields added in round 6 of the contract: optional for readers. */
  initiator?: Initiator | null;
  explanations?: Explanation[];
  progress?: Progress | null;
  metrics?: MetricSeries[];
  attempts?: number;
}

/** The schema id this extension reads. */
export const DIAGNOSIS_SCHEMA = 'rootrank.diagnosis/1';

/**
 * Check that `value` looks like a `rootrank.diagnosis/1` object.
 *
 * @throws Error naming what is wrong when the server answered something else.
 */
export function asDiagnosis(value: unknown): Diagnosis {
  if (typeof value !== 'object' || value === null) {
    throw new Error(`rootrank: expected a diagnosis object, got ${value === null ? 'null' : typeof value}`);
  }
  const d = value as Partial<Diagnosis>;
  if (d.schema !== DIAGNOSIS_SCHEMA) {
    throw new Error(`rootrank: expected schema ${DIAGNOSIS_SCHEMA}, got ${String(d.schema)}`);
  }
  return {
    sources: [],
    reasoning: [],
    collateral: [],
    findings: [],
    timeline: [],
    ranks: {},
    initiating_rank: null,
    initiating_host: null,
    unclassified: null,
    root_cause: null,
    ...d,
  } as Diagnosis;
}

/**
 * One line for a notification: `"<title> on rank <r>"` (or `"on <host>"`, or the title
 * alone), e.g. "CUDA out of memory in the caching allocator on rank 5". Returns
 * `undefined` when the diagnosis has no root cause.
 */
export function headline(d: Diagnosis): string | undefined {
  const cause = d.root_cause;
  if (!cause) {
    return undefined;
  }
  const rank = d.initiating_rank ?? cause.rank;
  const host = d.initiating_host ?? cause.host;
  if (rank !== null && rank !== undefined) {
    return `${cause.title} on rank ${rank}${host ? ` (${host})` : ''}`;
  }
  return host ? `${cause.title} on ${host}` : cause.title;
}

/** The first fix step (the one-line fix), or undefined. */
export function oneLineFix(d: Diagnosis): string | undefined {
  const fix = d.root_cause?.fix;
  const steps = Array.isArray(fix) ? fix : fix?.steps;
  return steps && steps.length ? steps[0] : undefined;
}
