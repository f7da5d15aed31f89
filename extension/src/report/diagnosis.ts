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
