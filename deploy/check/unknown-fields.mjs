// The fields a Kubernetes object may have, read from the type declarations that kubernetes-models generates
// from the Kubernetes OpenAPI document: its JSON-schema validators check required fields and types but, as
// the API server's own schema does, accept fields they do not know. A misspelt field would be dropped by
// the API server without a word; this finds it.
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
const modelsDir = dirname(require.resolve("kubernetes-models/package.json"));
const nodeModules = dirname(modelsDir);
const cache = new Map();

/** The declaration file of `spec` ("./Probe", "@kubernetes-models/apimachinery/...") seen from `from`. */
function resolve(spec, from) {
  const path = spec.replace(/\.js$/, "");
  return (path.startsWith(".") ? join(dirname(from), path) : join(nodeModules, path)) + ".d.ts";
}

/** Field name to type text of the interface declared in `file`, or null when it declares no interface. */
function fields(file) {
  if (!cache.has(file)) {
    const text = readFileSync(file, "utf8").replace(/\/\*[\s\S]*?\*\//g, "");
    const imports = new Map([...text.matchAll(/import \{ (\w+) \} from "([^"]+)"/g)].map((m) => [m[1], resolve(m[2], file)]));
    const start = text.search(/export interface I\w+ (extends TypeMeta )?\{/);
    let out = null;
    if (start >= 0) {
      out = new Map();
      const body = text.slice(text.indexOf("{", start) + 1);
      let depth = 0;
      let i = 0;
      for (const m of body.matchAll(/"([^"]+)"\??: |[{}]/g)) {
        if (m.index < i) continue;
        if (m[0] === "{") depth++;
        else if (m[0] === "}" && depth-- === 0) break;
        else if (depth === 0 && m[1]) {
          let end = m.index + m[0].length;
          for (let d = 0; d < 1e6 && !(d === 0 && body[end] === ";"); end++) {
            d += body[end] === "{" || body[end] === "<" ? 1 : body[end] === "}" || body[end] === ">" ? -1 : 0;
          }
          out.set(m[1], { type: body.slice(m.index + m[0].length, end).trim(), imports });
          i = end;
        }
      }
    }
    cache.set(file, out);
  }
  return cache.get(file);
}

function walk(value, type, imports, path, problems) {
  if (value == null || typeof value !== "object") return;
  const array = type.match(/^Array<(.+)>$/s);
  const map = type.match(/^\{\s*\[key: string\]: (.+?);\s*\}$/s);
  if (array && Array.isArray(value)) {
    value.forEach((v, i) => walk(v, array[1], imports, `${path}[${i}]`, problems));
  } else if (map) {
    Object.entries(value).forEach(([k, v]) => walk(v, map[1], imports, `${path}.${k}`, problems));
  } else if (imports.has(type) && existsSync(imports.get(type))) {
    walkObject(value, imports.get(type), path, problems);
  }
}

function walkObject(value, file, path, problems) {
  const known = fields(file);
  if (!known || Array.isArray(value)) return;
  for (const [key, v] of Object.entries(value)) {
    const field = known.get(key);
    if (!field) {
      problems.push(`${path}.${key} is not a field of ${file.slice(nodeModules.length + 1, -5)}`);
    } else {
      walk(v, field.type, field.imports, `${path}.${key}`, problems);
    }
  }
}

/**
 * The directory of the models of `apiVersion`: cert-manager's kinds come from their own package, whose
 * declarations type the top-level fields only (its specs are inline types, which are not walked).
 */
export function modelsOf(apiVersion) {
  return apiVersion.endsWith("cert-manager.io/v1")
    ? dirname(require.resolve("@kubernetes-models/cert-manager/package.json")) : modelsDir;
}

/** Every field of `doc` (an object of `apiVersion` and `kind`) that its kind does not have. */
export function unknownFields(doc) {
  const file = join(modelsOf(doc.apiVersion), doc.apiVersion, `${doc.kind}.d.ts`);
  const problems = [];
  walkObject(doc, file, doc.kind, problems);
  return problems;
}
