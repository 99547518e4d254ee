/**
 * Stable resource identities: every resource of both fixture stacks' plans keeps its URN, and the URNs its aliases
 * stand for, from one change to the next (the golden lists in test/fixtures/identities/). The engine matches state by
 * URN, then by alias: a rename or a new parent without an alias to the old URN deletes the deployed resource and
 * creates a new one (a bucket, a key, a routing rule set posted again).
 *
 * Updating a list is a deliberate step, reviewed with the change:
 *   HUB_EXPORT_UPDATE_IDENTITIES=1 npx vitest run test/components/identities.test.ts       added resources, renames with an alias
 *   HUB_EXPORT_UPDATE_IDENTITIES=remove npx vitest run test/components/identities.test.ts  also resources removed on purpose
 */
import fs from "node:fs";
import path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { describe, expect, it } from "vitest";
import { runProgramUnderMocks } from "../../components/planner";
import { planOf } from "../fixtures/plan";
import { fixtureStack } from "../fixtures/stacks";
import {
  compareIdentities,
  identitiesText,
  parseIdentities,
  planIdentities,
  type IdentityChanges,
} from "../support/identities";

const GOLDEN_DIR = path.join(__dirname, "..", "fixtures", "identities");
const UPDATE = process.env.HUB_EXPORT_UPDATE_IDENTITIES;

function explain(stack: string, c: IdentityChanges): string {
  return [
    ...c.lost.map(
      (u) =>
        `${stack}: ${u} is gone and no alias stands for it: the engine would delete it and create its successor. Give the new resource \`aliases: [{ name: "<old name>" }]\` (or the old parent), or, to remove it on purpose, update with HUB_EXPORT_UPDATE_IDENTITIES=remove`,
    ),
    ...c.droppedAliases.map(
      (d) =>
        `${stack}: ${d.urn} no longer declares its alias to ${d.alias}: a stack still deployed under that URN would lose it (remove on purpose: HUB_EXPORT_UPDATE_IDENTITIES=remove)`,
    ),
    ...c.aliased.map(
      (a) =>
        `${stack}: ${a.was} is now ${a.now} (an alias keeps it): update the list with HUB_EXPORT_UPDATE_IDENTITIES=1`,
    ),
    ...c.added.map((u) => `${stack}: ${u} is new: update the list with HUB_EXPORT_UPDATE_IDENTITIES=1`),
  ].join("\n");
}

describe.each(["qa", "prod"] as const)("the resource identities of stack %s", (stack) => {
  it("are the golden list's: every URN kept or aliased, none added unseen", async () => {
    const planned = planIdentities(await planOf(fixtureStack(stack).config, stack));
    const file = path.join(GOLDEN_DIR, `${stack}.txt`);
    const golden = fs.existsSync(file) ? parseIdentities(fs.readFileSync(file, "utf8")) : [];
    const changes = compareIdentities(golden, planned);
    const deliberate =
      UPDATE === "remove" || (UPDATE === "1" && changes.lost.length === 0 && changes.droppedAliases.length === 0);
    if (deliberate) {
      fs.mkdirSync(GOLDEN_DIR, { recursive: true });
      fs.writeFileSync(file, identitiesText(planned));
      return;
    }
    expect(explain(stack, changes)).toBe("");
  });
});

/** A parent component with four children, as one version of a program and the next might declare them. */
function twoVersions(next: boolean) {
  return () => {
    class Component extends pulumi.ComponentResource {
      constructor(type: string, name: string, opts?: pulumi.ComponentResourceOptions) {
        super(type, name, {}, opts);
      }
    }
    const component = (type: string, name: string, opts?: pulumi.ComponentResourceOptions) =>
      new Component(type, name, opts);
    class Thing extends pulumi.CustomResource {
      constructor(name: string, opts: pulumi.CustomResourceOptions) {
        super("test:index:Thing", name, {}, opts);
      }
    }
    const child = (name: string, opts: pulumi.CustomResourceOptions) => new Thing(name, opts);
    const other = component("test:index:Other", "other");
    if (!next) {
      const parts = component("test:index:Part", "parts");
      for (const name of ["first", "second", "third", "parts-fourth"]) child(name, { parent: parts });
      return {};
    }
    // The parent renamed with an alias; a child renamed with an alias, one without; one moved to another parent with
    // an alias to its old one; one named after its parent, which follows the parent's alias.
    const parts = component("test:index:Part", "renamed-parts", { aliases: [{ name: "parts" }] });
    child("parts-first", { parent: parts, aliases: [{ name: "first" }] });
    child("parts-second", { parent: parts });
    child("third", { parent: other, aliases: [{ parent: "urn:pulumi:test::hub-export::test:index:Part::parts" }] });
    child("renamed-parts-fourth", { parent: parts });
    return {};
  };
}

describe("the identity check", () => {
  it("finds a rename or a new parent without an alias, and accepts one with an alias as the engine would", async () => {
    const plan = (next: boolean) => runProgramUnderMocks({ stack: "test", config: {}, program: twoVersions(next) });
    const before = planIdentities(await plan(false));
    const after = planIdentities(await plan(true));
    const changes = compareIdentities(before, after);
    const name = (urn: string) => urn.slice(urn.lastIndexOf("::") + 2);
    expect(changes.lost.map(name)).toEqual(["second"]);
    expect(changes.aliased.map((a) => `${name(a.was)} -> ${name(a.now)}`).sort()).toEqual([
      "first -> parts-first",
      "parts -> renamed-parts",
      "parts-fourth -> renamed-parts-fourth",
      "third -> third",
    ]);
    expect(changes.added.map(name).sort()).toEqual([
      "parts-first",
      "parts-second",
      "renamed-parts",
      "renamed-parts-fourth",
      "third",
    ]);
  });
});
