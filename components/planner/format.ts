/** Printing a plan: JSON (every input, secrets masked) or a tree for reading (long values shortened). */
import type { PlanRun, PlannedResource } from "./index";
import { maskValue } from "./values";

export interface PlanJson {
  project: string;
  stack: string;
  offline: { accountId: string; region: string; note: string };
  resourceCount: number;
  resources: (Omit<PlannedResource, "inputs" | "state"> & { inputs: unknown })[];
  outputs: unknown;
}

const NOTE = "Planned without cloud access: ids and ARNs are derived stand-ins in this account; secrets are masked.";

/** Sorted by URN, so that two plans diff cleanly. */
export function planJson(run: PlanRun): PlanJson {
  return {
    project: run.project,
    stack: run.stack,
    offline: { accountId: run.account.accountId, region: run.account.region, note: NOTE },
    resourceCount: run.resources.length,
    resources: [...run.resources].sort((a, b) => (a.urn < b.urn ? -1 : a.urn > b.urn ? 1 : 0)).map(({ state: _state, ...r }) => ({ ...r, inputs: maskValue(r.inputs) })),
    outputs: maskValue(run.outputs),
  };
}

function shorten(value: unknown, max = 160): string {
  const text = JSON.stringify(value) ?? "undefined";
  return text.length > max ? `${text.slice(0, max)}... (${text.length} characters)` : text;
}

/** The resource tree, children in registration order, each with its options and inputs. */
export function formatPlanText(run: PlanRun): string {
  const children = new Map<string, PlannedResource[]>();
  for (const r of run.resources) {
    const key = r.parent ?? "";
    if (!children.has(key)) children.set(key, []);
    children.get(key)!.push(r);
  }
  const lines = [
    `Plan of stack '${run.stack}' (project ${run.project}): ${run.resources.length} resources.`,
    `${NOTE} Account ${run.account.accountId}, region ${run.account.region}.`,
    "",
  ];
  const visit = (r: PlannedResource, depth: number) => {
    const pad = "  ".repeat(depth);
    const flags = [
      r.read ? `read existing id ${r.id}` : "",
      r.options.import ? `imports existing id ${r.options.import}` : "",
      r.options.protect ? "protected" : "",
      r.options.retainOnDelete ? "retained on delete" : "",
      r.options.deleteBeforeReplace ? "delete before replace" : "",
      r.options.replaceOnChanges ? `replaced on a change of ${r.options.replaceOnChanges.join(", ")}` : "",
      r.options.additionalSecretOutputs ? `secret outputs: ${r.options.additionalSecretOutputs.join(", ")}` : "",
    ].filter(Boolean);
    lines.push(`${pad}${r.read ? "=" : "+"} ${r.type}  ${r.name}${flags.length ? `  (${flags.join("; ")})` : ""}`);
    const masked = maskValue(r.inputs) as Record<string, unknown>;
    for (const key of Object.keys(masked).sort()) lines.push(`${pad}    ${key}: ${shorten(masked[key])}`);
    for (const child of children.get(r.urn) ?? []) visit(child, depth + 1);
  };
  for (const root of children.get("") ?? []) visit(root, 0);

  const outputs = maskValue(run.outputs) as Record<string, unknown>;
  lines.push("", "Stack outputs:");
  for (const key of Object.keys(outputs).sort()) lines.push(`  ${key}: ${shorten(outputs[key], 400)}`);

  const byType = new Map<string, number>();
  for (const r of run.resources) byType.set(r.type, (byType.get(r.type) ?? 0) + 1);
  lines.push("", "Resources by type:");
  for (const [type, count] of [...byType].sort((a, b) => a[0].localeCompare(b[0]))) lines.push(`  ${String(count).padStart(5)}  ${type}`);
  return lines.join("\n") + "\n";
}

/**
 * What changes from plan `before` to plan `after` (both `planJson`, secrets masked), as Markdown for a pull request:
 * resources added, deleted and changed, each change with its inputs before and after. The offline counterpart of
 * `pulumi preview --diff`: no state, no cloud, so it shows what the code and config change, not drift.
 */
export function formatPlanDiff(before: PlanJson, after: PlanJson): string {
  const old = new Map(before.resources.map((r) => [r.urn, r]));
  const now = new Map(after.resources.map((r) => [r.urn, r]));
  const added = after.resources.filter((r) => !old.has(r.urn));
  const deleted = before.resources.filter((r) => !now.has(r.urn));
  const changed = after.resources.flatMap((r) => {
    const was = old.get(r.urn);
    if (!was) return [];
    const inputs = (x: typeof r) => x.inputs as Record<string, unknown>;
    const keys = [...new Set([...Object.keys(inputs(was)), ...Object.keys(inputs(r))])].sort();
    const inputChanges = keys.filter((k) => JSON.stringify(inputs(was)[k]) !== JSON.stringify(inputs(r)[k])).map((k) => ({ key: k, from: inputs(was)[k], to: inputs(r)[k] }));
    const optionsChanged = JSON.stringify(was.options) !== JSON.stringify(r.options) || JSON.stringify(was.dependsOn) !== JSON.stringify(r.dependsOn);
    return inputChanges.length || optionsChanged ? [{ r, inputChanges, optionsChanged }] : [];
  });
  const lines = [`#### Stack \`${after.stack}\`: ${added.length} to add, ${changed.length} to change, ${deleted.length} to delete`, ""];
  if (!added.length && !changed.length && !deleted.length) return [...lines, "No change.", ""].join("\n");
  lines.push("```diff");
  for (const r of added) lines.push(`+ ${r.type}  ${r.name}`);
  for (const { r, inputChanges, optionsChanged } of changed) {
    lines.push(`~ ${r.type}  ${r.name}`);
    for (const c of inputChanges) lines.push(`~     ${c.key}: ${shorten(c.from)} => ${shorten(c.to)}`);
    if (optionsChanged) lines.push(`~     (options or dependencies)`);
  }
  for (const r of deleted) lines.push(`- ${r.type}  ${r.name}`);
  lines.push("```", "");
  // A value cannot close the code block it is shown in.
  return lines.map((l, i) => (i > 2 && l !== "```" ? l.replace(/`{3,}/g, (m) => m.split("").join(" ")) : l)).join("\n");
}
