/**
 * Routing-rule values are an open set: the specification lists the values its data flow uses and says other flows
 * adjust the body. Any code of the right shape is accepted, planned and posted; one the specification does not list
 * is a warning of `hub-export validate` (with --strict too) and of the program, never a refusal.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import YAML from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runMain } from "../support/cli";
import { routingRuleSchema, unknownRoutingValues } from "../../core/routingRules";
import { fixtureStackFile } from "../fixtures/stacks";
import { postRoutingRules } from "../../providers/routingRules";
import { encodeCredentialsString } from "../../core/credentials";
import { startEmulator, type Emulator } from "../../emulator";

const TENANT = "3f6c9a2e-5b1d-4e8f-9a7c-2d4b6e8f0a1c";
const CREDENTIALS = { clientId: "acme-us-qa-hrsys", clientSecret: "s3cr3t-Ab9" };
/** Another data flow's rules: HRSYS employees also to HUBSYNC, and a status the specification does not show. */
const OTHER_FLOW = [
  {
    dataDomainCode: "EMPL",
    isDataMastered: 0,
    systemRoleCodeSource: "RDPR",
    systemRoleCodeTarget: "HUBSYNC",
    status: 1,
  },
  { dataDomainCode: "EMPL", isDataMastered: 1, systemRoleCodeSource: "MDM", systemRoleCodeTarget: "ALL", status: 2 },
];

describe("routing-rule values", () => {
  let dir: string;
  let hub: Emulator;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-routing-"));
    hub = await startEmulator({ config: { tenants: { [TENANT]: CREDENTIALS } } });
  });
  afterAll(async () => {
    await hub?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("accept any code of the right shape, and say which are not the specification's", () => {
    for (const rule of OTHER_FLOW) expect(routingRuleSchema.safeParse(rule).success).toBe(true);
    expect(unknownRoutingValues(OTHER_FLOW[0])).toEqual([
      { field: "systemRoleCodeTarget", value: "HUBSYNC", known: ["MKT", "CRM", "OM", "ALL", "HUBOPT", "MDM"] },
    ]);
    expect(unknownRoutingValues(OTHER_FLOW[1])).toEqual([{ field: "status", value: 2, known: [-1, 1] }]);
    expect(routingRuleSchema.safeParse({ ...OTHER_FLOW[0], systemRoleCodeTarget: "hub sync" }).success).toBe(false);
  });

  it("validate warns, with --strict too, and lists them on the ok line", async () => {
    const doc = YAML.parse(fs.readFileSync(fixtureStackFile("qa"), "utf8"));
    doc.config["hubExport:hubTenants"][0].routingRules = OTHER_FLOW;
    const file = path.join(dir, "Pulumi.qa.yaml");
    fs.writeFileSync(file, YAML.stringify(doc));
    const warnings = [
      'warning: hubExport:hubTenants[0].routingRules[0].systemRoleCodeTarget: "HUBSYNC" is not among the specification\'s values ("MKT", "CRM", "OM", "ALL", "HUBOPT", "MDM"): check that the hub knows it',
      "warning: hubExport:hubTenants[0].routingRules[1].status: 2 is not among the specification's values (-1, 1): check that the hub knows it",
    ];
    for (const args of [
      ["validate", "--file", file],
      ["validate", "--strict", "--file", file],
    ]) {
      const r = await runMain(args);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr.trimEnd().split("\n")).toEqual(warnings);
      expect(r.stdout.split("\n")[0]).toMatch(/, 2 routing-rule warning\(s\)$/);
    }
  });

  it("are posted to the cfg API as configured", async () => {
    hub.reset();
    await postRoutingRules({
      cfgApiUrl: hub.urls.cfg,
      tenantId: TENANT,
      credentialsString: encodeCredentialsString(CREDENTIALS),
      rules: OTHER_FLOW,
    });
    expect(hub.state().routingRules[TENANT]).toMatchObject({ posts: 1, rules: OTHER_FLOW });
  });
});
