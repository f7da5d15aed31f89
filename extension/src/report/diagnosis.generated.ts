/**
 * GENERATED from schema/diagnosis.schema.json by extension/scripts/gen-types.js
 * (json-schema-to-typescript). Do not edit: change the schema, then `npm run gen:types`.
 */

/**
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "MetricValue".
 */
export type MetricValue = number | ('nan' | 'inf' | '-inf');

/**
 * rootrank.diagnosis/1: what `rootrank diagnose --format json` prints and the language server's rootrank.diagnose returns (server/rootrank/model.py). Lines are 1-based, columns 0-based code points, times seconds since the epoch. Extend it, never break it: new fields are optional for readers.
 */
export interface Diagnosis {
  schema: 'rootrank.diagnosis/1';
  sources: string[];
  root_cause: RootCause | null;
  initiating_rank: number | null;
  initiating_host: string | null;
  reasoning: string[];
  collateral: Collateral[];
  findings: Finding[];
  unclassified: Finding | null;
  ranks: Ranks;
  stack: string[];
  timeline: TimelineEvent[];
  lines_read: number;
  warnings: string[];
  explanations?: Explanation[];
  initiator?: Initiator | null;
  progress?: Progress | null;
  metrics?: Metric[];
  attempts?: number;
}
/**
 * The finding nothing else explains, with its entry rendered for this log.
 *
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "RootCause".
 */
export interface RootCause {
  signature: string;
  failure_class: string;
  title: string;
  category: string;
  confidence: number;
  rank: number | null;
  host: string | null;
  time: number | null;
  count: number;
  /**
   * every rank that reported this root cause
   */
  ranks: number[];
  evidence: Evidence[];
  captures: {
    [k: string]: string;
  };
  frames: Frame[];
  summary: string;
  mechanism: string;
  symptoms: Symptom[];
  fix: Fix;
  confirm: string[];
  verify: string;
  references: string[];
  related: Related[];
  user_frame?: UserFrame | null;
  call_sites?: CallSite[];
}
/**
 * A line that supports a finding.
 *
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "Evidence".
 */
export interface Evidence {
  /**
   * the source file (masked like text)
   */
  path: string;
  /**
   * 1-based line in that file
   */
  line: number;
  /**
   * the line as shown (masked)
   */
  text: string;
  /**
   * the global rank that printed it, or null
   */
  rank: number | null;
  /**
   * 0-based code-point offset of the match in the original line, or null
   */
  column_start: number | null;
  /**
   * 0-based, end exclusive, or null
   */
  column_end: number | null;
}
/**
 * One traceback frame, innermost last.
 *
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "Frame".
 */
export interface Frame {
  file: string;
  /**
   * 1-based line in that file
   */
  line: number;
  func: string;
  /**
   * false for site-packages, the standard library and torch
   */
  user: boolean;
}
/**
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "Symptom".
 */
export interface Symptom {
  text: string;
  meaning: string;
}
/**
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "Fix".
 */
export interface Fix {
  steps: string[];
  /**
   * code per stack: pytorch, hf, deepspeed, megatron, vllm
   */
  code?: {
    [k: string]: string;
  };
  variant?: FixVariant | null;
}
/**
 * Which fix variant was chosen and why (added this round).
 *
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "FixVariant".
 */
export interface FixVariant {
  id: string;
  why: string;
}
/**
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "Related".
 */
export interface Related {
  id: string;
  title: string;
}
/**
 * The initiating rank's innermost frame in the user's own code.
 *
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "UserFrame".
 */
export interface UserFrame {
  file: string;
  line: number;
  func: string;
}
/**
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "CallSite".
 */
export interface CallSite {
  rank: number | null;
  file: string;
  line: number;
  func: string;
  collective: string | null;
}
/**
 * Findings the root cause explains, one group per signature.
 *
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "Collateral".
 */
export interface Collateral {
  signature: string;
  failure_class: string;
  title: string;
  role: 'cause' | 'symptom';
  ranks: number[];
  count: number;
  evidence: Evidence[];
  captures: {
    [k: string]: string;
  };
}
/**
 * A signature matched in a log (Finding.to_dict()).
 *
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "Finding".
 */
export interface Finding {
  /**
   * signature id, or "unclassified"
   */
  signature: string;
  /**
   * a slug of signatures/taxonomy.json, or "unclassified"
   */
  failure_class: string;
  title: string;
  role: 'cause' | 'symptom';
  severity: 'error' | 'warning';
  rank: number | null;
  host: string | null;
  /**
   * seconds since the epoch of the first occurrence, or null
   */
  time: number | null;
  count: number;
  captures: {
    [k: string]: string;
  };
  evidence: Evidence[];
  frames: Frame[];
}
/**
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "Ranks".
 */
export interface Ranks {
  seen: number[];
  /**
   * host by rank (the rank as a string key)
   */
  hosts: {
    [k: string]: string;
  };
  world_size: number | null;
}
/**
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "TimelineEvent".
 */
export interface TimelineEvent {
  rank: number | null;
  time: number | null;
  order: number;
  signature: string;
  title: string;
  kind: 'root' | 'collateral' | 'finding';
  path: string;
  line: number;
}
/**
 * An edge the causal analysis drew.
 *
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "Explanation".
 */
export interface Explanation {
  cause: EventRef;
  effect: EventRef;
  /**
   * the causal rule's name
   */
  rule: string;
  why: string;
}
/**
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "EventRef".
 */
export interface EventRef {
  kind: 'finding' | 'exception' | 'exit' | 'signal' | 'progress' | 'summary' | 'attempt' | 'onset';
  signature: string | null;
  rank: number | null;
  path: string | null;
  /**
   * 1-based
   */
  line: number | null;
}
/**
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "Initiator".
 */
export interface Initiator {
  rank: number | null;
  strategy: string | null;
  why: string;
  candidates: number[];
  agreeing: string[];
}
/**
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "Progress".
 */
export interface Progress {
  ranks: ProgressRank[];
  end_time: number | null;
  silent_seconds: number | null;
  behind: number[];
}
/**
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "ProgressRank".
 */
export interface ProgressRank {
  rank: number | null;
  step: number;
  time: number | null;
  path: string;
  line: number;
}
/**
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "Metric".
 */
export interface Metric {
  name: string;
  rank: number | null;
  /**
   * [step, value], at most 500, extremes and non-finite points kept
   */
  points: [number, number | string][];
  onsets: Onset[];
}
/**
 * This interface was referenced by `Diagnosis`'s JSON-Schema
 * via the `definition` "Onset".
 */
export interface Onset {
  kind: string;
  step: number;
  rank: number | null;
  line: number;
  path: string;
  why: string;
}
