/**
 * The `rootrank.diagnosis/1` JSON contract, as the language server's `rootrank.diagnose`
 * command and the CLI's `--format json` return it (source: `server/rootrank/model.py`,
 * `Diagnosis.to_dict()`). Lines are 1-based, columns 0-based code points, times are
 * seconds since the epoch. Every field a newer engine adds is ignored here.
 */

// Every type of the contract comes from the one schema (diagnosis.generated.ts, written by
// `npm run gen:types` from schema/diagnosis.schema.json): the extension reads exactly what
// the engine writes, and a schema change that a reader cannot handle fails `tsc`.
import type { Diagnosis } from './diagnosis.generated';
export type {
  CallSite,
  Collateral,
  Diagnosis,
  EventRef,
  Evidence,
  Explanation,
  Finding,
  Fix,
  FixVariant,
  Frame,
  Initiator,
  Metric as MetricSeries,
  MetricValue,
  Onset as MetricOnset,
  Progress,
  ProgressRank,
  Ranks,
  Related as RelatedEntry,
  RootCause,
  Symptom,
  TimelineEvent,
  UserFrame,
} from './diagnosis.generated';

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
/**
 * Whether the initiating rank is the one the root cause's reporters waited for: the ranks that
 * reported it (root_cause.ranks, the victims' watchdog timeouts) do not include it. The
 * headline then reads "... caused by rank 2", never "... on rank 2" (the engine's
 * report.waited_for).
 */
export function waitedFor(d: Diagnosis): boolean {
  const rank = d.initiating_rank;
  const ranks = d.root_cause?.ranks ?? [];
  return rank !== null && rank !== undefined && ranks.length > 0 && !ranks.includes(rank);
}

export function headline(d: Diagnosis): string | undefined {
  const cause = d.root_cause;
  if (!cause) {
    return undefined;
  }
  // The initiating rank only: a root cause's own rank, when the engine names no initiating
  // rank, is a rank that reported it (a victim), not the answer (as the CLI's headline).
  const rank = d.initiating_rank;
  const host = d.initiating_host ?? (cause.rank === null || cause.rank === undefined ? cause.host : null);
  if (rank !== null && rank !== undefined) {
    return `${cause.title} ${waitedFor(d) ? 'caused by' : 'on'} rank ${rank}${host ? ` (${host})` : ''}`;
  }
  return host ? `${cause.title} on ${host}` : cause.title;
}

/** The first fix step (the one-line fix), or undefined. */
export function oneLineFix(d: Diagnosis): string | undefined {
  const steps = d.root_cause?.fix.steps;
  return steps && steps.length ? steps[0] : undefined;
}
