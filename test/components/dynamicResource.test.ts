/**
 * The dynamic resources' provider code (components/dynamicResource.ts): serialized as pulumi.dynamic.Resource does it,
 * once per provider, and a stand-in in the offline plan.
 */
import { describe, expect, it } from "vitest";
import { OFFLINE_PROVIDER_CODE } from "../../components/dynamicResource";
import { runProgramUnderMocks, type PlanRun } from "../../components/planner";
import { hubExportProgram } from "../../components/program";
import { DYNAMIC_PROVIDER_KEY, maskValue } from "../../components/planner/values";
import { fixtureStack } from "../fixtures/stacks";
import { FIXED_SOURCE_HASH, planOf } from "../fixtures/plan";

const codes = (run: PlanRun) =>
  run.resources.filter((r) => r.type.startsWith("pulumi-nodejs:dynamic/")).map((r) => r.inputs[DYNAMIC_PROVIDER_KEY]);

describe("a dynamic resource's provider code", () => {
  it("is a stand-in in the offline plan, which prints it as such", async () => {
    const found = codes(await planOf(fixtureStack("qa").config));
    expect(found.length).toBeGreaterThan(10);
    expect(new Set(found)).toEqual(new Set([OFFLINE_PROVIDER_CODE]));
    expect(maskValue({ [DYNAMIC_PROVIDER_KEY]: OFFLINE_PROVIDER_CODE })).toEqual({
      [DYNAMIC_PROVIDER_KEY]: "[dynamic provider code]",
    });
  });

  it("is the serialized provider otherwise, one text per provider", async () => {
    const { config, secretKeys } = fixtureStack("qa");
    const run = await runProgramUnderMocks({
      stack: "qa",
      config,
      secretKeys,
      program: () => hubExportProgram({ offline: true, deployable: true, taskSourceHash: FIXED_SOURCE_HASH }),
    });
    const found = codes(run);
    for (const code of found) expect(code).toMatch(/^exports\.handler = /);
    // Config rows, both baselines, routing rules, script files, shared objects (the fixture has no scripts release).
    expect(new Set(found).size).toBe(5);
  });
});
