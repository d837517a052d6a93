#!/usr/bin/env node
// Generates src/models.ts (the request and response types of @capture/client) from the
// service's OpenAPI document, sdks/openapi.json (made by `capture openapi`). No dependencies.
//
//   node sdks/typescript/generate.mjs            write src/models.ts
//   node sdks/typescript/generate.mjs --check    exit 1, naming the file, when src/models.ts
//                                                is not what the document generates (drift)
//   --openapi <file>  --out <file>               other paths (the defaults are the above)
//
// Each component schema becomes an interface (an object with properties) or a type alias
// (string enums as unions of literals, oneOf/anyOf as unions, allOf as intersections, maps as
// Record<string, T>); nullable fields are `T | null`, fields outside `required` optional.
// Besides the schemas it writes the webhook event names (the document's `webhooks`) and the
// operations that take an Idempotency-Key (the client retries those safely).
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '..', '..');

function parseArgs(argv) {
  const args = { check: false, openapi: resolve(here, '..', 'openapi.json'), out: resolve(here, 'src', 'models.ts') };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--check') args.check = true;
    else if (a === '--openapi') args.openapi = resolve(argv[++i]);
    else if (a === '--out') args.out = resolve(argv[++i]);
    else if (a === '-h' || a === '--help') {
      console.log('usage: node generate.mjs [--check] [--openapi FILE] [--out FILE]');
      process.exit(0);
    } else {
      console.error(`generate.mjs: unknown argument ${a}`);
      process.exit(2);
    }
  }
  return args;
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const RESERVED = new Set(['break', 'case', 'catch', 'class', 'const', 'continue', 'debugger', 'default', 'delete', 'do', 'else', 'enum', 'export', 'extends', 'false', 'finally', 'for', 'function', 'if', 'import', 'in', 'instanceof', 'new', 'null', 'return', 'super', 'switch', 'this', 'throw', 'true', 'try', 'typeof', 'var', 'void', 'while', 'with']);

/** A component name as a TypeScript identifier (`Foo.Bar-baz` → `FooBarBaz`). */
function typeName(name) {
  let n = name.replace(/[^A-Za-z0-9_$]+(.)?/g, (_, c) => (c ? c.toUpperCase() : ''));
  if (!IDENT.test(n) || RESERVED.has(n)) n = `_${n}`;
  return n;
}

function propKey(k) {
  return IDENT.test(k) ? k : JSON.stringify(k);
}

/** A JSDoc block from a schema's description, default, format, bounds and deprecation. */
function doc(schema, indent) {
  if (!schema || typeof schema !== 'object') return '';
  const lines = [];
  if (typeof schema.description === 'string' && schema.description.trim()) {
    lines.push(...schema.description.trim().split('\n'));
  }
  const facts = [];
  if (schema.format) facts.push(`format: ${schema.format}`);
  if (schema.minimum !== undefined) facts.push(`minimum: ${schema.minimum}`);
  if (schema.maximum !== undefined) facts.push(`maximum: ${schema.maximum}`);
  if (schema.minLength !== undefined) facts.push(`minLength: ${schema.minLength}`);
  if (schema.maxLength !== undefined) facts.push(`maxLength: ${schema.maxLength}`);
  if (schema.maxItems !== undefined) facts.push(`maxItems: ${schema.maxItems}`);
  if (schema.pattern !== undefined) facts.push(`pattern: ${schema.pattern}`);
  if (facts.length) lines.push(facts.join(', '));
  if (schema.default !== undefined) lines.push(`@default ${JSON.stringify(schema.default)}`);
  if (schema.deprecated) lines.push('@deprecated');
  if (!lines.length) return '';
  const safe = lines.map((l) => l.replace(/\*\//g, '*\\/').trimEnd());
  if (safe.length === 1) return `${indent}/** ${safe[0]} */\n`;
  return `${indent}/**\n${safe.map((l) => (l ? `${indent} * ${l}` : `${indent} *`)).join('\n')}\n${indent} */\n`;
}

function literal(v) {
  return v === null ? 'null' : JSON.stringify(v);
}

function union(parts) {
  const seen = [];
  for (const p of parts) if (!seen.includes(p)) seen.push(p);
  if (seen.includes('unknown')) return 'unknown';
  // `null` last reads best: `string | null`.
  seen.sort((a, b) => (a === 'null') - (b === 'null'));
  return seen.length ? seen.map((p) => (/[&]|=>/.test(p) && seen.length > 1 ? `(${p})` : p)).join(' | ') : 'never';
}

function wrapArray(t) {
  return /^[A-Za-z0-9_$.<>, "']+$/.test(t) && !t.includes(' | ') ? `${t}[]` : `Array<${t}>`;
}

/** The TypeScript type of `schema`, written at `indent` (for inline object literals). */
function tsType(schema, indent, ctx) {
  if (schema === true || schema === undefined || schema === null) return 'unknown';
  if (schema === false) return 'never';
  if (schema.$ref) {
    const m = /^#\/components\/schemas\/(.+)$/.exec(schema.$ref);
    if (!m) throw new Error(`unsupported $ref ${schema.$ref}`);
    const name = decodeURIComponent(m[1]);
    if (!ctx.schemas[name]) throw new Error(`$ref to a missing schema ${name}`);
    const t = typeName(name);
    return schema.nullable ? `${t} | null` : t;
  }
  let t;
  if (schema.const !== undefined) t = literal(schema.const);
  else if (Array.isArray(schema.enum)) t = union(schema.enum.map(literal));
  else if (Array.isArray(schema.oneOf) || Array.isArray(schema.anyOf)) {
    const alts = (schema.oneOf ?? schema.anyOf).map((s) => tsType(s, indent, ctx));
    t = union(alts);
    // Properties beside a oneOf apply to every branch.
    if (schema.properties) t = `(${t}) & ${objectType(schema, indent, ctx)}`;
  } else if (Array.isArray(schema.allOf)) {
    const parts = schema.allOf.map((s) => tsType(s, indent, ctx));
    if (schema.properties) parts.push(objectType(schema, indent, ctx));
    t = parts.length === 1 ? parts[0] : parts.map((p) => (p.includes(' | ') ? `(${p})` : p)).join(' & ');
  } else {
    const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
    if (!types.length) {
      if (schema.properties || schema.additionalProperties) types.push('object');
      else if (schema.items) types.push('array');
    }
    if (!types.length) t = 'unknown';
    else t = union(types.map((ty) => primitive(ty, schema, indent, ctx)));
  }
  if (schema.nullable && t !== 'unknown') t = union([t, 'null']);
  return t;
}

function primitive(ty, schema, indent, ctx) {
  switch (ty) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array': {
      if (Array.isArray(schema.prefixItems)) {
        return `[${schema.prefixItems.map((s) => tsType(s, indent, ctx)).join(', ')}]`;
      }
      return wrapArray(tsType(schema.items, indent, ctx));
    }
    case 'object':
      return objectType(schema, indent, ctx);
    default:
      return 'unknown';
  }
}

/** An inline object type: `{ a: string; b?: number }`, or a Record for a map. */
function objectType(schema, indent, ctx) {
  const props = schema.properties ?? {};
  const keys = Object.keys(props);
  const ap = schema.additionalProperties;
  if (!keys.length) {
    if (ap && typeof ap === 'object') return `Record<string, ${tsType(ap, indent, ctx)}>`;
    return 'Record<string, unknown>';
  }
  const inner = `${indent}  `;
  let out = '{\n';
  out += members(schema, inner, ctx);
  if (ap && typeof ap === 'object') out += `${inner}[key: string]: unknown;\n`;
  out += `${indent}}`;
  return out;
}

function members(schema, indent, ctx) {
  const required = new Set(schema.required ?? []);
  let out = '';
  for (const [k, s] of Object.entries(schema.properties ?? {})) {
    out += doc(s, indent);
    const ro = s && s.readOnly ? 'readonly ' : '';
    out += `${indent}${ro}${propKey(k)}${required.has(k) ? '' : '?'}: ${tsType(s, indent, ctx)};\n`;
  }
  return out;
}

function isPlainObject(schema) {
  return (
    schema &&
    schema.properties &&
    !schema.oneOf &&
    !schema.anyOf &&
    !schema.allOf &&
    !schema.enum &&
    (schema.type === undefined || schema.type === 'object' || (Array.isArray(schema.type) && schema.type.length === 1 && schema.type[0] === 'object')) &&
    !schema.nullable
  );
}

export function generate(openapi, sourceLabel) {
  const schemas = openapi.components?.schemas ?? {};
  const ctx = { schemas };
  const names = Object.keys(schemas).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const seen = new Map();
  for (const n of names) {
    const t = typeName(n);
    if (seen.has(t)) throw new Error(`schemas ${seen.get(t)} and ${n} both map to the type ${t}`);
    seen.set(t, n);
  }
  let out = '';
  out += `// Generated by sdks/typescript/generate.mjs from ${sourceLabel}`;
  out += ` (${openapi.info?.title ?? 'API'} ${openapi.info?.version ?? ''}`.trimEnd() + ', OpenAPI ' + (openapi.openapi ?? '?') + ').\n';
  out += '// Do not edit: change the service, run `capture openapi > sdks/openapi.json`, then\n';
  out += '// `node sdks/typescript/generate.mjs` (`--check` fails when this file is out of date).\n';
  out += '/* eslint-disable */\n\n';
  for (const name of names) {
    const schema = schemas[name];
    const t = typeName(name);
    out += doc(schema, '');
    if (isPlainObject(schema) && !(schema.additionalProperties && typeof schema.additionalProperties === 'object')) {
      out += `export interface ${t} {\n${members(schema, '  ', ctx)}}\n\n`;
    } else {
      out += `export type ${t} = ${tsType(schema, '', ctx)};\n\n`;
    }
  }
  // The webhook events the service sends (the document's `webhooks`).
  const events = Object.keys(openapi.webhooks ?? {}).sort();
  out += '/** The type of a webhook event (`type` of a delivery, `X-Service-Event`); new ones may appear. */\n';
  out += `export type WebhookEventType =${events.length ? events.map((e) => `\n  | ${JSON.stringify(e)}`).join('') : ' never'};\n\n`;
  out += `/** Every webhook event type this version of the document lists. */\n`;
  out += `export const WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = [${events.map((e) => `\n  ${JSON.stringify(e)},`).join('')}${events.length ? '\n' : ''}];\n\n`;
  // Operations that take an Idempotency-Key: a retry of one of them replays the first answer.
  const idem = [];
  for (const [path, item] of Object.entries(openapi.paths ?? {})) {
    for (const [method, op] of Object.entries(item)) {
      if (!op || typeof op !== 'object' || !Array.isArray(op.parameters)) continue;
      const params = [...(item.parameters ?? []), ...op.parameters];
      if (params.some((p) => p && p.in === 'header' && String(p.name).toLowerCase() === 'idempotency-key')) {
        idem.push(`${method.toUpperCase()} ${path}`);
      }
    }
  }
  idem.sort();
  out += '/** The operations (`METHOD /path`) that honour an Idempotency-Key: the service replays the first answer to a retry. */\n';
  out += `export const IDEMPOTENT_OPERATIONS: readonly string[] = [${idem.map((e) => `\n  ${JSON.stringify(e)},`).join('')}${idem.length ? '\n' : ''}];\n`;
  return out;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const openapi = JSON.parse(readFileSync(args.openapi, 'utf8'));
  const label = relative(repoRoot, args.openapi).split('\\').join('/');
  const text = generate(openapi, label.startsWith('..') ? args.openapi : label);
  const outLabel = relative(process.cwd(), args.out) || args.out;
  if (args.check) {
    let current = null;
    try {
      current = readFileSync(args.out, 'utf8');
    } catch {
      console.error(`${outLabel} is missing: run node ${relative(process.cwd(), fileURLToPath(import.meta.url))}`);
      process.exit(1);
    }
    if (current !== text) {
      const a = current.split('\n');
      const b = text.split('\n');
      let i = 0;
      while (i < a.length && i < b.length && a[i] === b[i]) i++;
      console.error(`${outLabel} differs from what ${relative(process.cwd(), args.openapi)} generates (first at line ${i + 1}):`);
      console.error(`  committed: ${a[i] ?? '<end of file>'}`);
      console.error(`  generated: ${b[i] ?? '<end of file>'}`);
      console.error(`run: node ${relative(process.cwd(), fileURLToPath(import.meta.url))}`);
      process.exit(1);
    }
    console.log(`${outLabel} is up to date with ${relative(process.cwd(), args.openapi)}`);
    return;
  }
  writeFileSync(args.out, text);
  console.log(`wrote ${outLabel} (${Object.keys(openapi.components?.schemas ?? {}).length} schemas)`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
