// Compile-time check (tsc, npm run check): every rootrank.diagnosis/1 object the engine can
// write, as the schema describes it (diagnosis.generated.ts), is a value the extension's
// reader types accept. A schema change the extension cannot read fails the build here.
// (The spreads only turn the generated interfaces into plain object types, which TypeScript
// lets meet the readers' `[key: string]: unknown`.)
import type * as Schema from './diagnosis.generated';
import type { Diagnosis } from './diagnosis';

export function readableByTheExtension(written: Schema.Diagnosis): Diagnosis {
  return {
    ...written,
    root_cause: written.root_cause && { ...written.root_cause },
    timeline: written.timeline.map((event) => ({ ...event })),
  };
}
