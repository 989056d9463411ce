// Lints every .cypher kernel with Neo4j's language library (`lintCypherQuery`) against the Neo4j 5
// procedure and function registry that the library ships (its reference schema, dumped from a
// Neo4j 5 server). Parameters are declared from each file's `// params:` header, so an undeclared
// `$param` is an error too. Exit code 1 on any error; warnings are printed but do not fail.
//
// usage: node lint.mjs [CYPHER_DIR] [--json]
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { lintCypherQuery } from '@neo4j-cypher/language-support';

const here = dirname(fileURLToPath(import.meta.url));
// The registry file is not in the package's "exports", so it is imported by path.
const REGISTRY = join(here, 'node_modules/@neo4j-cypher/language-support/dist/esm/project/language-support/src/tests/testData.js');
const { testData } = await import(pathToFileURL(REGISTRY).href);
const args = process.argv.slice(2);
const dir = resolve(args.find((a) => !a.startsWith('--')) ?? join(here, '..', '..', 'cypher'));
const asJson = args.includes('--json');

const SAMPLE = {
  int: 1, float: 0.5, string: 'x', bool: true, map: {},
  'list<string>': ['x'], 'list<float>': [0.5], 'list<int>': [1], 'list<map>': [{}],
};

function declaredParams(text) {
  const header = [];
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t.startsWith('//')) break;
    header.push(t.slice(2).trim());
  }
  const joined = header.join('\n');
  const m = joined.match(/^params:([\s\S]*?)(?=^(?:returns|notes?|used by):|$(?![\s\S]))/m);
  const params = {};
  if (!m) return params;
  for (const d of m[1].matchAll(/\$([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([^—;\n]+?)\s*(?:—|;|$)/gm)) {
    const type = d[2].trim();
    if (!(type in SAMPLE)) throw new Error(`unknown param type '${type}' for $${d[1]}`);
    params[d[1]] = SAMPLE[type];
  }
  return params;
}

const registry = testData.mockSchema;
const results = [];
let errors = 0;
const files = readdirSync(dir).filter((f) => f.endsWith('.cypher')).sort();
if (files.length === 0) {
  console.error(`no .cypher files in ${dir}`);
  process.exit(1);
}
for (const file of files) {
  const text = readFileSync(join(dir, file), 'utf8');
  let diagnostics;
  try {
    const schema = {
      procedures: registry.procedures,
      functions: registry.functions,
      defaultLanguage: 'CYPHER 5',
      parameters: declaredParams(text),
    };
    diagnostics = lintCypherQuery(text, schema).diagnostics;
  } catch (err) {
    diagnostics = [{ severity: 1, message: String(err), range: { start: { line: 0, character: 0 } } }];
  }
  const found = diagnostics.map((d) => ({
    severity: d.severity === 1 ? 'error' : 'warning',
    line: d.range.start.line + 1,
    col: d.range.start.character + 1,
    message: d.message,
  }));
  errors += found.filter((d) => d.severity === 'error').length;
  results.push({ file, diagnostics: found });
}

if (asJson) {
  console.log(JSON.stringify({ dir, files: results, errors }, null, 2));
} else {
  for (const r of results) {
    const status = r.diagnostics.some((d) => d.severity === 'error') ? 'FAIL' : 'ok  ';
    console.log(`${status} ${r.file}`);
    for (const d of r.diagnostics) console.log(`     ${d.severity} ${r.file}:${d.line}:${d.col} ${d.message}`);
  }
  console.log(`${files.length} files linted against the Neo4j 5 registry, ${errors} errors`);
}
process.exit(errors > 0 ? 1 : 0);
