/**
 * Resource identities: the URN of every resource of a plan and the URNs its aliases stand for, as the engine computes
 * them (pkg/resource/deploy/step_generator.go in pulumi/pulumi: collapseAliasToUrn, inheritedChildAlias,
 * generateAliases; sdk/go/common/resource/alias.go CreateURN). The engine finds a resource's old state by its URN,
 * then by each alias URN: a resource whose URN changed without an alias to the old one is a new resource, and the old
 * one is deleted. test/components/identities.test.ts holds both stacks' plans to a golden list with these functions.
 */
import type { AliasSpec, PlanRun, PlannedResource } from "../../components/planner";

const ROOT_STACK_TYPE = "pulumi:pulumi:Stack";

/** The parts of `urn:pulumi:<stack>::<project>::<qualified type>::<name>` (a name may itself hold `::`). */
export function urnParts(urn: string): { stack: string; project: string; qualifiedType: string; name: string } {
  const body = urn.slice("urn:pulumi:".length);
  const [stack, project, qualifiedType, ...name] = body.split("::");
  return { stack, project, qualifiedType, name: name.join("::") };
}

/** sdk/go/common/resource/alias.go CreateURN: the parent's URN up to its name, then `$<type>::<name>`. */
export function createUrn(name: string, type: string, parent: string, project: string, stack: string): string {
  if (parent === "") return `urn:pulumi:${stack}::${project}::${type}::${name}`;
  return `${parent.slice(0, parent.lastIndexOf("::"))}$${type}::${name}`;
}

export interface Identity {
  urn: string;
  /** The URNs its aliases stand for, the ones inherited from its parent's aliases included; sorted. */
  aliases: string[];
}

/**
 * pkg/resource/deploy/deployment.go generateURN: the parent's full qualified type (none for the root stack), `$`, the
 * type, then the name. (The SDK's mock monitor names only the immediate parent's type, so its URNs are not the
 * engine's once resources nest: these are computed from the plan's types, names and parents instead.)
 */
export function generateUrn(parent: string, type: string, name: string, project: string, stack: string): string {
  const parentType = parent ? urnParts(parent).qualifiedType : "";
  const qualified = parentType !== "" && parentType !== ROOT_STACK_TYPE ? `${parentType}$${type}` : type;
  return `urn:pulumi:${stack}::${project}::${qualified}::${name}`;
}

/** Every resource's URN and alias URNs, in registration order (a parent before its children). */
export function planIdentities(run: PlanRun): Identity[] {
  // The plan's (mock) URNs, of resources and of alias parents, as the engine's.
  const engineUrn = new Map<string, string>();
  const aliasesOf = new Map<string, string[]>();
  const out: Identity[] = [];
  for (const planned of run.resources) {
    const parent = planned.parent ? engineUrn.get(planned.parent) : undefined;
    if (planned.parent && parent === undefined)
      throw new Error(`${planned.urn}: its parent ${planned.parent} was not registered before it`);
    const urn = generateUrn(parent ?? "", planned.type, planned.name, run.project, run.stack);
    engineUrn.set(planned.urn, urn);
    const aliases = (planned.options.aliases ?? []).map((a) =>
      "parentUrn" in a && a.parentUrn ? { ...a, parentUrn: engineUrn.get(a.parentUrn) ?? a.parentUrn } : a,
    );
    const r = { ...planned, urn, ...(parent ? { parent } : {}), options: { ...planned.options, aliases } };
    const generated = generateAliases(r, run, aliasesOf);
    aliasesOf.set(urn, generated);
    out.push({ urn, aliases: generated });
  }
  return out;
}

/** step_generator.go generateAliases: the resource's own aliases, then those its parent's aliases imply. */
function generateAliases(r: PlannedResource, run: PlanRun, aliasesOf: Map<string, string[]>): string[] {
  const result = new Set<string>();
  const specs = r.options.aliases ?? [];
  const parent = r.parent ?? "";
  const parentAliases = parent ? (aliasesOf.get(parent) ?? []) : [];
  for (const spec of specs) for (const urn of collapseAliasToUrns(r, spec, run, aliasesOf)) result.add(urn);
  for (const parentAlias of parentAliases) {
    result.add(inheritedChildAlias(r.type, r.name, urnParts(parent).name, parentAlias, run));
    for (const spec of specs) {
      for (const childAlias of collapseAliasToUrns(r, spec, run, aliasesOf)) {
        const { qualifiedType, name } = urnParts(childAlias);
        const type = qualifiedType.slice(qualifiedType.lastIndexOf("$") + 1);
        result.add(inheritedChildAlias(type, name, urnParts(parent).name, parentAlias, run));
      }
    }
  }
  result.delete(r.urn);
  return [...result].sort();
}

/**
 * step_generator.go collapseAliasToUrn: blank fields take the resource's own; a parent given explicitly (the Node.js
 * SDK always sends the resource's parent) also stands for that parent's old URNs; the root stack as parent is none.
 */
function collapseAliasToUrns(
  r: PlannedResource,
  spec: AliasSpec,
  run: PlanRun,
  aliasesOf: Map<string, string[]>,
): string[] {
  if ("urn" in spec) return [spec.urn];
  const name = spec.name || r.name;
  const type = spec.type || r.type;
  const project = spec.project || run.project;
  const stack = spec.stack || run.stack;
  let parents = [spec.parentUrn || r.parent || ""];
  if (spec.parentUrn) parents.push(...(aliasesOf.get(spec.parentUrn) ?? []));
  if (spec.noParent) parents = [""];
  return parents.map((p) =>
    createUrn(name, type, p && urnParts(p).qualifiedType === ROOT_STACK_TYPE ? "" : p, project, stack),
  );
}

/** step_generator.go inheritedChildAlias: a child named after its parent follows the parent's old name. */
function inheritedChildAlias(
  childType: string,
  childName: string,
  parentName: string,
  parentAlias: string,
  run: PlanRun,
): string {
  const aliasName = childName.startsWith(parentName)
    ? urnParts(parentAlias).name + childName.slice(parentName.length)
    : childName;
  const parentType = urnParts(parentAlias).qualifiedType;
  const type = parentType !== "" && parentType !== ROOT_STACK_TYPE ? `${parentType}$${childType}` : childType;
  return `urn:pulumi:${run.stack}::${run.project}::${type}::${aliasName}`;
}

/** The golden file's text: one URN a line, each followed by its alias URNs (indented `<- `), sorted by URN. */
export function identitiesText(identities: Identity[]): string {
  return (
    [...identities]
      .sort((a, b) => a.urn.localeCompare(b.urn))
      .flatMap((i) => [i.urn, ...i.aliases.map((a) => `  <- ${a}`)])
      .join("\n") + "\n"
  );
}

export function parseIdentities(text: string): Identity[] {
  const out: Identity[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    if (line.startsWith("  <- ")) out.at(-1)!.aliases.push(line.slice(5));
    else out.push({ urn: line, aliases: [] });
  }
  return out;
}

export interface IdentityChanges {
  /** Golden URNs no resource has and no alias stands for: the engine would delete them (and create their successors). */
  lost: string[];
  /** Golden URNs that are gone but an alias of a planned resource stands for: renamed or re-parented properly. */
  aliased: { was: string; now: string }[];
  /** URNs not in the golden list. */
  added: string[];
  /** Aliases that were in the golden list and are no longer declared: stacks not yet moved would lose the resource. */
  droppedAliases: { urn: string; alias: string }[];
}

export function compareIdentities(golden: Identity[], planned: Identity[]): IdentityChanges {
  const now = new Map(planned.map((i) => [i.urn, i]));
  const aliasOwner = new Map<string, string>();
  for (const i of planned) for (const a of i.aliases) aliasOwner.set(a, i.urn);
  const goldenUrns = new Set(golden.map((g) => g.urn));
  const changes: IdentityChanges = { lost: [], aliased: [], added: [], droppedAliases: [] };
  for (const g of golden) {
    const still = now.get(g.urn);
    if (still) {
      for (const alias of g.aliases)
        if (!still.aliases.includes(alias)) changes.droppedAliases.push({ urn: g.urn, alias });
      continue;
    }
    const owner = aliasOwner.get(g.urn);
    if (owner) changes.aliased.push({ was: g.urn, now: owner });
    else changes.lost.push(g.urn);
  }
  for (const i of planned) if (!goldenUrns.has(i.urn)) changes.added.push(i.urn);
  return changes;
}
