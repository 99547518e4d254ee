/**
 * `hub-export plan` shows the change: after an edit of a committed stack file (a new APAC hub tenant, as
 * docs/onboarding.md adds one, and a hub tenant's secret set anew), it plans the file as git HEAD has it and the
 * working copy's, and prints the counts first, then each added resource and each changed input: the rendered
 * pipeline as a unified diff of its changed lines, the new tenant_credentials.txt entry masked. The stack file is the
 * test's own, in a git repository of its own.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import YAML from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runMain } from "../support/cli";
import { rawStackConfigFor, TENANTS } from "../../bench/platform";

const APAC = "5b1e7c2a-9d4f-4a6b-8c3e-1f2a3b4c5d6e";
const US = TENANTS.US.hubTenantId;

/** A stack of the test's own: the test platform's config on example hosts, its secrets as `secure:` ciphertexts. */
function stackConfig(): Record<string, any> {
  const hub = {
    ers: "https://hub-ext-test.hub.example.com/ers/api/",
    cfg: "https://hub-ext-test.hub.example.com/cfg/api/",
    hrsys: "https://hub-ext-test.hub.example.com/hrsys/api/",
  };
  const queues = {
    US: "https://mq-us.anypoint.example.com",
    EU: "https://mq-eu.anypoint.example.com",
    APAC: "https://mq-ap.anypoint.example.com",
  };
  const raw = rawStackConfigFor("postgres://platform_admin:x@platdb-test.example.com:5432/PLATDB", { ...hub, queues });
  delete raw.hub.allowLoopback;
  for (const login of [raw.database.admin, raw.database.task]) delete login.password;
  raw.hubTenants = raw.hubTenants.map((t: Record<string, unknown>, i: number) => ({
    ...t,
    clientSecret: { secure: `v1:tenant-ciphertext-${i}` },
  }));
  for (const q of Object.values<Record<string, unknown>>(raw.queues)) delete q.clientSecret;
  return raw;
}

const stackFile = (raw: Record<string, any>) =>
  YAML.stringify({ config: Object.fromEntries(Object.entries(raw).map(([k, v]) => [`hubExport:${k}`, v])) });

describe("plan --file of a stack file edited since git HEAD", () => {
  let dir: string;
  let file: string;
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=test", "-c", "user.email=test@example.com", ...args], {
      cwd: dir,
      stdio: "ignore",
    });

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-plan-change-"));
    file = path.join(dir, "Pulumi.plantest.yaml");
    fs.writeFileSync(file, stackFile(stackConfig()));
    git("init", "-q");
    git("add", ".");
    git("commit", "-q", "-m", "the stack as deployed");
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("with no edit: nothing to compare, the resource count, and --full for the listing", async () => {
    const r = await runMain(["plan", "--file", file]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split("\n")[0]).toMatch(
      /^Stack plantest: \d+ resources; Pulumi\.plantest\.yaml is as git HEAD has it: no change to show\.$/,
    );
    expect(r.stdout).toContain("'--full' lists every resource with its inputs");
  });

  it("after adding an APAC hub tenant and setting a secret anew: counts first, then the details, secrets masked", async () => {
    const raw = stackConfig();
    raw.hubTenants.push({
      hubTenantId: APAC,
      hubTenantCode: "ACME_APAC_TEST",
      hubRegion: "APAC",
      clientId: "acme-apac-test-hrsys",
      clientSecret: { secure: "v1:apac-ciphertext" },
    });
    raw.hubTenants[0].clientSecret = { secure: "v1:tenant-ciphertext-set-anew" };
    raw.platTenants.push({ platRegion: "AP", codebase: "GBL", gblOrUs: "GBL", hubTenantCode: "ACME_APAC_TEST" });
    raw.queues.APAC = {
      connectionName: "HUB_MQ_APAC_TEST",
      baseUrl: "https://mq-ap.anypoint.example.com",
      queueName: "acme-empl-apac-test",
      clientAccessId: "0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f",
    };
    fs.writeFileSync(file, stackFile(raw));

    const r = await runMain(["plan", "--file", file]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const lines = r.stdout.split("\n");
    // The hub tenant's 3 HUB_API_CONFIG rows, its platform tenant's row, its routing rule set, the region's
    // connection record (secret and version).
    expect(lines[0]).toMatch(/^Stack plantest: 7 to add, \d+ to change, 0 to delete$/);
    expect(lines[1]).toBe(
      "  Pulumi.plantest.yaml in the working copy against git HEAD's, both planned offline with this checkout's code (secrets masked);",
    );
    for (const api of ["ERS", "CFG", "HRSYS"])
      expect(lines).toContain(
        `+ pulumi-nodejs:dynamic/hubExport:ConfigRow  hub-export-config-tables/HUB_API_CONFIG/${APAC}/${api}`,
      );
    expect(lines).toContain("+ pulumi-nodejs:dynamic/hubExport:ConfigRow  hub-export-config-tables/HUB_PLAT_CONFIG/AP");
    expect(lines).toContain(`+ pulumi-nodejs:dynamic/hubExport:RoutingRuleSet  hub-export-hub-routing-rules/${APAC}`);
    expect(lines).toContain("+     credentialsString: (secret)");
    expect(r.stdout).not.toContain("__provider");

    // The rendered pipeline gains the APAC publish step: its changed lines, not the whole document or a cut one.
    const pipeline = lines.findIndex((l) =>
      /^~ aws:s3\/bucketObjectv2:BucketObjectv2 {2}hub-export-bucket\/pipelines\//.test(l),
    );
    expect(pipeline).toBeGreaterThan(0);
    expect(lines[pipeline + 1]).toBe("~     content: (unified diff of the changed lines)");
    const hunk = lines.slice(
      pipeline + 2,
      lines.findIndex((l, i) => i > pipeline && /^[~+-] \S/.test(l)),
    );
    expect(hunk[0]).toMatch(/^ {8}@@ -\d+,\d+ \+\d+,\d+ @@$/);
    expect(hunk).toContainEqual(expect.stringMatching(/^\+\s+"connection": "HUB_MQ_APAC_TEST"$/));
    expect(hunk.filter((l) => l.startsWith("-"))).toEqual([]);
    expect(hunk.length).toBeLessThan(40);
    expect(r.stdout).not.toContain("characters) =>");

    // tenant_credentials.txt: the new entry, and the one whose secret was set anew, masked.
    const entries = lines.findIndex((l) => /^~ pulumi-nodejs:dynamic\/hubExport:ScriptFileEntries /.test(l));
    expect(lines.slice(entries + 1, entries + 3).sort()).toEqual(
      [`~     entries["${APAC}"]: (secret, added)`, `~     entries["${US}"]: (secret, changed)`].sort(),
    );
    expect(lines).toContain("~     credentialsString: (secret, changed)");
    for (const hidden of ["tenant-ciphertext", "apac-ciphertext", "PLACEHOLDER-SECRET"])
      expect(r.stdout).not.toContain(hidden);

    const full = await runMain(["plan", "--file", file, "--full"]);
    expect(full.stdout.split("\n")[0]).toMatch(/^Plan of stack 'plantest' \(project hub-export\): \d+ resources\.$/);
  }, 300_000);
});
