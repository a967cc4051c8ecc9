// Validates Kubernetes objects against the Kubernetes OpenAPI schema, offline,
// with npm's kubernetes-models (types, required fields, formats, enums).
// Usage: node validate_schema.mjs NODE_MODULES_DIR OBJECTS.json
// OBJECTS.json: [{"where": "file#index", "object": {...}}, ...]
// Prints one line per object; exits 1 if any is invalid or of a kind the
// package does not model.
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [modules, objectsFile] = process.argv.slice(2);
if (!modules || !objectsFile) {
  console.error("usage: node validate_schema.mjs NODE_MODULES_DIR OBJECTS.json");
  process.exit(2);
}
const objects = JSON.parse(readFileSync(objectsFile, "utf8"));
let failed = 0;
for (const { where, object } of objects) {
  const { apiVersion, kind } = object;
  // "v1" lives in kubernetes-models/v1, "apps/v1" in kubernetes-models/apps/v1.
  const file = join(modules, "kubernetes-models", apiVersion, `${kind}.js`);
  if (!existsSync(file)) {
    console.log(`FAIL ${where}: no schema for ${apiVersion} ${kind}`);
    failed++;
    continue;
  }
  const Model = (await import(pathToFileURL(file)))[kind];
  try {
    new Model(object).validate();
    console.log(`ok   ${where}: ${apiVersion} ${kind} ${object.metadata?.name}`);
  } catch (e) {
    console.log(`FAIL ${where}: ${apiVersion} ${kind} ${object.metadata?.name}: ${e.message}`);
    failed++;
  }
}
process.exit(failed ? 1 : 0);
