/**
 * What changes between two offline plans, resource by resource and input by input: long text or JSON as a unified diff
 * of the changed lines (the `diff` package), a secret as "(secret, changed)" with its keys, never its value. The
 * offline counterpart of `pulumi preview --diff`: it shows what the config or code changes, not drift.
 */
import { structuredPatch } from "diff";
import { DYNAMIC_PROVIDER_KEY, comparableValue } from "./values";

/** A resource of either plan: a PlanRun's (inputs tagged) or a saved `plan --json`'s (inputs masked). */
export interface DiffResource {
  urn: string;
  type: string;
  name: string;
  options: object;
  inputs: unknown;
}

/** A secret leaf: `value` is its content as JSON, kept in memory to compare and never printed; absent when unknown. */
class SecretLeaf {
  constructor(readonly value: string | undefined) {}
}

export interface InputChange {
  /** `content`, `entries["5b1e…"]`, `rows[0].value` */
  path: string;
  kind: "added" | "deleted" | "changed";
  /** The lines that show it, without the resource's indentation. */
  lines: string[];
}

export interface PlanChanges {
  added: { resource: DiffResource; inputs: [string, unknown][] }[];
  changed: { resource: DiffResource; inputs: InputChange[]; optionsChanged: boolean }[];
  deleted: DiffResource[];
}

const comparable = (inputs: unknown) =>
  comparableValue(inputs, (leaf) => new SecretLeaf(leaf === undefined ? undefined : JSON.stringify(leaf)));

/** Resources of `after` not in `before` (by URN), those in both whose inputs or options differ, and those gone. */
export function planChanges(before: DiffResource[], after: DiffResource[]): PlanChanges {
  const old = new Map(before.map((r) => [r.urn, r]));
  const now = new Set(after.map((r) => r.urn));
  const changes: PlanChanges = { added: [], changed: [], deleted: before.filter((r) => !now.has(r.urn)) };
  for (const r of after) {
    const was = old.get(r.urn);
    if (!was) {
      const inputs = comparable(r.inputs) as Record<string, unknown>;
      // A dynamic resource's provider is code, the same for every resource of its kind: not a detail of this one.
      changes.added.push({
        resource: r,
        inputs: Object.keys(inputs)
          .filter((k) => k !== DYNAMIC_PROVIDER_KEY)
          .sort()
          .map((k) => [k, inputs[k]]),
      });
      continue;
    }
    const inputs = diffValues(comparable(was.inputs), comparable(r.inputs), "");
    // Dependencies alone change nothing in the engine's diff: only inputs and options do.
    const optionsChanged = JSON.stringify(was.options) !== JSON.stringify(r.options);
    if (inputs.length || optionsChanged) changes.changed.push({ resource: r, inputs, optionsChanged });
  }
  return changes;
}

export function changeCounts(c: PlanChanges): string {
  return `${c.added.length} to add, ${c.changed.length} to change, ${c.deleted.length} to delete`;
}

/**
 * The changes as lines for a reader: `+ type  name` and its inputs, `~ type  name` and each changed input, `- type
 * name`. A line's first character is its kind, so that a Markdown `diff` block colours it.
 */
export function changeLines(c: PlanChanges): string[] {
  const lines: string[] = [];
  for (const { resource, inputs } of c.added) {
    lines.push(`+ ${resource.type}  ${resource.name}`);
    for (const [key, value] of inputs) lines.push(`+     ${key}: ${shown(value)}`);
  }
  for (const { resource, inputs, optionsChanged } of c.changed) {
    lines.push(`~ ${resource.type}  ${resource.name}`);
    for (const change of inputs) {
      const [first, ...rest] = change.lines;
      lines.push(
        `~     ${change.path}: ${first}`,
        ...rest.map((l) => `${l[0] === "+" || l[0] === "-" ? l[0] : " "}       ${l.slice(1)}`),
      );
    }
    if (optionsChanged) lines.push("~     (resource options)");
  }
  for (const r of c.deleted) lines.push(`- ${r.type}  ${r.name}`);
  return lines;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  !!v && typeof v === "object" && !Array.isArray(v) && !(v instanceof SecretLeaf);

function childPath(path: string, key: string | number): string {
  if (typeof key === "number") return `${path}[${key}]`;
  if (/^[A-Za-z_$][\w$]*$/.test(key)) return path ? `${path}.${key}` : key;
  return `${path}[${JSON.stringify(key)}]`;
}

function containsSecret(v: unknown): boolean {
  if (v instanceof SecretLeaf) return true;
  if (Array.isArray(v)) return v.some(containsSecret);
  return isPlainObject(v) && Object.values(v).some(containsSecret);
}

/** The changes from `a` to `b` (comparable values), leaf by leaf; a text or JSON document as one change. */
function diffValues(a: unknown, b: unknown, path: string): InputChange[] {
  if (a === undefined || b === undefined) {
    if (a === b) return [];
    const kind = a === undefined ? "added" : "deleted";
    const value = a === undefined ? b : a;
    const line =
      value instanceof SecretLeaf
        ? `(secret, ${kind})`
        : `(${kind === "added" ? "added" : "deleted, was"}) ${shown(value)}`;
    return [{ path, kind, lines: [line] }];
  }
  if (a instanceof SecretLeaf || b instanceof SecretLeaf) {
    // A saved plan's secret is unknown: it cannot be told changed.
    if (
      a instanceof SecretLeaf &&
      b instanceof SecretLeaf &&
      (a.value === undefined || b.value === undefined || a.value === b.value)
    )
      return [];
    return [{ path, kind: "changed", lines: ["(secret, changed)"] }];
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    return [...new Set([...Object.keys(a), ...Object.keys(b)])]
      .sort()
      .flatMap((k) => diffValues(a[k], b[k], childPath(path, k)));
  }
  if (Array.isArray(a) && Array.isArray(b) && containsSecret([a, b])) {
    return Array.from({ length: Math.max(a.length, b.length) }, (_, i) =>
      diffValues(a[i], b[i], childPath(path, i)),
    ).flat();
  }
  if (JSON.stringify(a) === JSON.stringify(b)) return [];
  const text = textDiff(a, b);
  if (text) return [{ path, kind: "changed", lines: [`(unified diff of the changed lines)`, ...text] }];
  return [{ path, kind: "changed", lines: [`${shorten(a)} => ${shorten(b)}`] }];
}

/** A document's text: multi-line text as it is, JSON text and structured values pretty-printed; null for a short value. */
function documentText(v: unknown): string | null {
  if (typeof v === "string") {
    if (/^\s*[[{]/.test(v)) {
      try {
        return JSON.stringify(JSON.parse(v), null, 2);
      } catch {
        // Not JSON: as it is.
      }
    }
    return v.includes("\n") || v.length > MAX_SHOWN ? v : null;
  }
  if (v && typeof v === "object") {
    const text = JSON.stringify(v, null, 2);
    return text.length > MAX_SHOWN ? text : null;
  }
  return null;
}

/** The changed lines of two documents with 3 lines of context, hunk by hunk (`@@ -a,b +c,d @@`); null unless both are documents. */
function textDiff(a: unknown, b: unknown): string[] | null {
  const before = documentText(a);
  const after = documentText(b);
  if (before === null || after === null) return null;
  const patch = structuredPatch(
    "before",
    "after",
    before.endsWith("\n") ? before : `${before}\n`,
    after.endsWith("\n") ? after : `${after}\n`,
    undefined,
    undefined,
    { context: 3 },
  );
  return patch.hunks.flatMap((h) => [
    ` @@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`,
    ...h.lines.filter((l) => !l.startsWith("\\")),
  ]);
}

const MAX_SHOWN = 160;

/** A value as JSON, cut at `max` characters. */
export function shorten(value: unknown, max = MAX_SHOWN): string {
  const text = JSON.stringify(value) ?? "undefined";
  return text.length > max ? `${text.slice(0, max)}... (${text.length} characters)` : text;
}

function allSecret(v: unknown): boolean {
  if (v instanceof SecretLeaf) return true;
  const children = Array.isArray(v) ? v : isPlainObject(v) ? Object.values(v) : [];
  return children.length > 0 && children.every(allSecret);
}

/** A value as one line: secrets as (secret) (a secret object with its keys), long text as its size. */
function shown(value: unknown): string {
  if (value instanceof SecretLeaf) return "(secret)";
  if (isPlainObject(value) && allSecret(value)) return `(secret: ${Object.keys(value).join(", ")})`;
  if (containsSecret(value))
    return shorten(JSON.parse(JSON.stringify(value, (_k, v: unknown) => (v instanceof SecretLeaf ? "(secret)" : v))));
  if (typeof value === "string" && value.includes("\n")) return `(text, ${value.split("\n").length} lines)`;
  return shorten(value);
}
