// The extension's types of the rootrank.diagnosis/1 contract, generated from the one schema
// (schema/diagnosis.schema.json) with json-schema-to-typescript, so the TypeScript side cannot
// drift from what the engine writes.
//   node extension/scripts/gen-types.js           (npm run gen:types)   writes the file
//   node extension/scripts/gen-types.js --check   (npm run check:types) exit 1 when it is stale
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { compileFromFile } = require('json-schema-to-typescript');

const ROOT = path.resolve(__dirname, '..', '..');
const SCHEMA = path.join(ROOT, 'schema', 'diagnosis.schema.json');
const OUT = path.join(ROOT, 'extension', 'src', 'report', 'diagnosis.generated.ts');
const BANNER =
  '/**\n' +
  ' * GENERATED from schema/diagnosis.schema.json by extension/scripts/gen-types.js\n' +
  ' * (json-schema-to-typescript). Do not edit: change the schema, then `npm run gen:types`.\n' +
  ' */';

async function main() {
  const check = process.argv.includes('--check');
  const generated = await compileFromFile(SCHEMA, {
    bannerComment: BANNER,
    additionalProperties: false,
    unreachableDefinitions: true,
    style: { singleQuote: true, printWidth: 120 },
  });
  if (check) {
    const current = fs.existsSync(OUT) ? fs.readFileSync(OUT, 'utf8') : '';
    if (current !== generated) {
      console.error(`${path.relative(ROOT, OUT)} is out of date with schema/diagnosis.schema.json: run npm run gen:types`);
      process.exit(1);
    }
    console.log(`${path.relative(ROOT, OUT)} is up to date`);
    return;
  }
  fs.writeFileSync(OUT, generated);
  console.log(`wrote ${path.relative(ROOT, OUT)}`);
}

main().catch((err) => {
  console.error(`gen-types: ${err.message}`);
  process.exit(2);
});
