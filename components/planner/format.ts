/** Printing a plan: JSON (every input, secrets masked) or a tree for reading (long values shortened). */
import type { PlanRun, PlannedResource } from "./index";
import { maskValue } from "./values";
import { changeCounts, changeLines, planChanges, shorten } from "./diff";

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
    resources: [...run.resources]
      .sort((a, b) => (a.urn < b.urn ? -1 : a.urn > b.urn ? 1 : 0))
      .map(({ state: _state, ...r }) => ({ ...r, inputs: maskValue(r.inputs) })),
    outputs: maskValue(run.outputs),
  };
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

  lines.push("", ...formatResourceCounts(run));
  return lines.join("\n") + "\n";
}

/** `Resources by type:` and one line per type with its count. */
export function formatResourceCounts(run: Pick<PlanRun, "resources">): string[] {
  const byType = new Map<string, number>();
  for (const r of run.resources) byType.set(r.type, (byType.get(r.type) ?? 0) + 1);
  return [
    "Resources by type:",
    ...[...byType]
      .sort((a, b) => a[0].localeCompare(b[0]))
      .map(([type, count]) => `  ${String(count).padStart(5)}  ${type}`),
  ];
}

/**
 * What changes from plan `before` to plan `after` (both `planJson`, secrets masked), as Markdown for a pull request:
 * resources added, deleted and changed, each change with its inputs before and after (components/planner/diff.ts).
 * A saved plan's secrets are masked: a change of one cannot be seen here (`plan --stack` against git HEAD sees it).
 */
export function formatPlanDiff(before: PlanJson, after: PlanJson): string {
  const changes = planChanges(before.resources, after.resources);
  const lines = [`#### Stack \`${after.stack}\`: ${changeCounts(changes)}`, ""];
  if (!changes.added.length && !changes.changed.length && !changes.deleted.length)
    return [...lines, "No change.", ""].join("\n");
  // A value cannot close the code block it is shown in.
  lines.push(
    "```diff",
    ...changeLines(changes).map((l) => l.replace(/`{3,}/g, (m) => m.split("").join(" "))),
    "```",
    "",
  );
  return lines.join("\n");
}
