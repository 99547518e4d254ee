/**
 * `hub-export plan --diff-from`: what CI comments on a pull request, the offline plan's changes against main's.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { formatPlanDiff, planJson } from "../../components/planner/format";
import { editKey, fixtureStack, fixtureStackFile } from "../fixtures/stacks";
import { planOf } from "../fixtures/plan";
import { runMain } from "../support/cli";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-plan-diff-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A hang guard per plan: one took over 120 s at a load of 25 on two cores. */

describe("the offline plan's diff", () => {
  it("lists the resources added, changed (with their inputs before and after) and deleted, secrets masked", async () => {
    const before = planJson(await planOf(fixtureStack("qa").config));
    const edited = editKey(
      editKey(fixtureStack("qa").config, "schedule", (s: Record<string, unknown>) => ({
        ...s,
        expression: "cron(0 4 * * ? *)",
      })),
      "hubTenants",
      (t: Record<string, unknown>[]) => [t[0], { ...t[1], clientSecret: "a-new-secret-Zx9" }],
    );
    const after = planJson(
      await planOf(
        editKey(edited, "alerts", (a: Record<string, unknown>) => ({ ...a, email: ["oncall@acme.example.com"] })),
      ),
    );
    const text = formatPlanDiff(before, after);
    expect(text.split("\n")[0]).toMatch(/^#### Stack `qa`: 1 to add, \d+ to change, 1 to delete$/);
    expect(text).toContain(
      '~ aws:scheduler/schedule:Schedule  hub-export-schedule\n~     scheduleExpression: "cron(0 3 * * ? *)" => "cron(0 4 * * ? *)"',
    );
    expect(text).toMatch(
      /^\+ aws:sns\/topicSubscription:TopicSubscription {2}hub-export-monitoring-email-oncall@acme\.example\.com$/m,
    );
    expect(text).toMatch(
      /^- aws:sns\/topicSubscription:TopicSubscription {2}hub-export-monitoring-email-hrsys-export-qa@acme\.example\.com$/m,
    );
    // The changed secret shows as a change of a masked value, never the value.
    expect(text).not.toContain("a-new-secret-Zx9");
    expect(formatPlanDiff(before, before)).toBe("#### Stack `qa`: 0 to add, 0 to change, 0 to delete\n\nNo change.\n");
  });

  it("cannot be closed early by a value: a fence in an input is broken up", () => {
    const plan = (value: string) => ({
      project: "p",
      stack: "qa",
      offline: { accountId: "", region: "", note: "" },
      resourceCount: 1,
      outputs: {},
      resources: [
        { urn: "u", type: "t", name: "n", custom: true, read: false, dependsOn: [], options: {}, inputs: { v: value } },
      ],
    });
    const text = formatPlanDiff(plan("a"), plan("```\n# injected"));
    expect(text.split("\n").filter((l) => l === "```")).toHaveLength(1);
    expect(text).toContain("` ` `");
  });

  it("is what `plan --diff-from` prints; a file that is not a plan is one line, exit 1", async () => {
    const base = path.join(dir, "main-qa.json");
    const json = await runMain(["plan", "--file", fixtureStackFile("qa"), "--json"]);
    fs.writeFileSync(base, json.stdout);
    const same = await runMain(["plan", "--file", fixtureStackFile("qa"), "--diff-from", base]);
    expect(same.code).toBe(0);
    expect(same.stdout).toBe("#### Stack `qa`: 0 to add, 0 to change, 0 to delete\n\nNo change.\n");
    fs.writeFileSync(path.join(dir, "not-a-plan.json"), "{}");
    const bad = await runMain([
      "plan",
      "--file",
      fixtureStackFile("qa"),
      "--diff-from",
      path.join(dir, "not-a-plan.json"),
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim()).toBe(
      `--diff-from ${path.join(dir, "not-a-plan.json")}: not the output of 'hub-export plan --json' (no resources)`,
    );
    // Three plans: on a loaded machine each may take minutes.
  }, 900_000);
});
