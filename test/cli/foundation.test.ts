import { afterAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import YAML from "yaml";
import { runMain, PROJECT_ROOT } from "../support/cli";
import { findTags } from "../../core/tags";
import { availableStacks } from "../../config/load";
import { fixtureStackFile } from "../fixtures/stacks";

const dirs: string[] = [];
const tmp = () => {
  dirs.push(fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-cli-")));
  return dirs[dirs.length - 1];
};
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

describe("hub-export validate / render / credentials-string", () => {
  // The repository's stack files are the users': whatever they hold, they validate (no value of theirs is checked).
  it.each(["qa", "prod"])("validate --stack %s prints ok", async (stack) => {
    const r = await runMain(["validate", "--stack", stack]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^ok: stack ${stack}: `));
  });

  it("validate --file of a fixture prints ok and nothing on stderr", async () => {
    const r = await runMain(["validate", "--file", fixtureStackFile("qa")]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^ok: .*Pulumi\.qa\.yaml: client ACME, 2 hub tenant\(s\) in US, EU, 3 platform tenant\(s\)\n/,
    );
  });

  it("render prints valid JSON with no tags left and only the stack's regions' publish steps", async () => {
    const r = await runMain(["render", "--file", fixtureStackFile("qa")]);
    expect(r.code).toBe(0);
    const def = JSON.parse(r.stdout);
    expect(findTags(r.stdout)).toEqual([]);
    const publish = def.tasks.find((t: { type: string }) => t.type === "PublishMessages");
    expect(publish.steps.map((s: { region: string }) => s.region)).toEqual(["US", "EU"]);
  });

  it("render --out writes the file", async () => {
    const out = path.join(tmp(), "def.json");
    const r = await runMain(["render", "--file", fixtureStackFile("prod"), "--out", out]);
    expect(r.code).toBe(0);
    const def = JSON.parse(fs.readFileSync(out, "utf8"));
    expect(def.tasks.find((t: { type: string }) => t.type === "PublishMessages").steps).toHaveLength(3);
  });

  it("bad config exits 1 with one line per problem and no stack trace", async () => {
    const doc = YAML.parse(fs.readFileSync(fixtureStackFile("qa"), "utf8"));
    doc.config["hubExport:clientName"] = "acme";
    doc.config["hubExport:hubTenants"][0].hubTenantId = "nope";
    doc.config["hubExport:hubTenants"][1].clientSecret = "plain-text-secret-value";
    const file = path.join(tmp(), "Pulumi.qa.yaml");
    fs.writeFileSync(file, YAML.stringify(doc));
    const r = await runMain(["validate", "--file", file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr.trimEnd().split("\n")).toEqual([
      `${file}: invalid configuration (3 problems)`,
      expect.stringMatching(/^hubExport:clientName: must be uppercase/),
      expect.stringMatching(/^hubExport:hubTenants\[0\]\.hubTenantId: must be a UUID/),
      "hubExport:hubTenants[1].clientSecret: is a secret in plain text: set it with 'pulumi config set --secret' so the stack file holds only ciphertext",
    ]);
    expect(r.stderr).not.toContain("plain-text-secret-value");
    expect(r.stderr).not.toMatch(/\bat .*\.ts:\d+/);
  });

  it("validate warns about values of another environment, and fails on them with --strict", async () => {
    const doc = YAML.parse(fs.readFileSync(fixtureStackFile("qa"), "utf8"));
    doc.config["hubExport:jobName"] = "HRSYS_EMPL_HUB_ACME_202611_PROD";
    doc.config["hubExport:hub"].regions.EU.apis.ERS = "https://hub-ext-prod-eu.hub.example.com/ers/api/";
    const file = path.join(tmp(), "Pulumi.qa.yaml");
    fs.writeFileSync(file, YAML.stringify(doc));
    const lines = [
      "hubExport:jobName: 'HRSYS_EMPL_HUB_ACME_202611_PROD' does not end in the environment suffix _QA (hubExport:environment is QA)",
      "hubExport:hub.regions.EU.apis.ERS: https://hub-ext-prod-eu.hub.example.com/ers/api/ points at a PROD host, but this stack is QA",
    ];
    const lax = await runMain(["validate", "--file", file]);
    expect(lax.code).toBe(0);
    expect(lax.stderr.trimEnd().split("\n")).toEqual(lines.map((l) => `warning: ${l}`));
    expect(lax.stdout.split("\n")[0]).toMatch(/, 2 environment warning\(s\)$/);
    // Then what a real `pulumi up` would stop on: the committed file's secrets and placeholders.
    expect(lax.stdout).toContain("before 'pulumi up': ");
    expect(lax.stdout).toContain(
      "  hubExport:database.admin.password: secret not set: pulumi config set --stack qa --secret --path 'hubExport:database.admin.password'\n",
    );
    const strict = await runMain(["validate", "--strict", "--file", file]);
    expect(strict.code).toBe(1);
    expect(strict.stdout).toBe("");
    expect(strict.stderr.trimEnd().split("\n")).toEqual([
      `${file} (--strict, environment QA): invalid configuration (2 problems)`,
      ...lines,
    ]);
    for (const stack of ["qa", "prod"])
      expect((await runMain(["validate", "--strict", "--stack", stack])).code).toBe(0);
  });

  it("a missing stack file exits 1, usage errors exit 2", async () => {
    const missing = await runMain(["validate", "--stack", "nosuchstack"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      `no stack 'nosuchstack': Pulumi.nosuchstack.yaml does not exist in ${PROJECT_ROOT}; the stacks are ${availableStacks().join(", ")} (or give --file PATH)\n`,
    );
    const both = await runMain(["render", "--stack", "qa", "--file", "x.yaml"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/give --stack or --file, not both/);
    expect((await runMain(["validate", "--nope"])).code).toBe(2);
    expect((await runMain(["frobnicate"])).code).toBe(2);
    expect((await runMain([])).code).toBe(2);
  });

  it("writes output larger than a pipe's buffer whole before it exits", async () => {
    const r = await runMain(["plan", "--file", fixtureStackFile("prod"), "--json"]);
    expect(r.code).toBe(0);
    expect(r.stdout.length).toBeGreaterThan(65_536);
    expect(JSON.parse(r.stdout).resourceCount).toBeGreaterThan(50);
  });

  it.each(["validate", "render", "credentials-string"])("%s --help prints its usage", async (cmd) => {
    const r = await runMain([cmd, "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Usage: hub-export ${cmd}`);
  });

  it("credentials-string encodes, reading the secret from stdin with -", async () => {
    const args = await runMain(["credentials-string", "--client-id", "abc", "--client-secret", "s3cr3t"]);
    expect(args.stdout).toBe("eydjbGllbnRJZCc6ICdhYmMnLCAnY2xpZW50U2VjcmV0JzogJ3MzY3IzdCd9==\n");
    const stdin = await runMain(["credentials-string", "--client-id", "o'neil", "--client-secret", "-"], {
      input: "back\\slash\n",
    });
    expect(stdin.code).toBe(0);
    expect(stdin.stdout).toBe("eydjbGllbnRJZCc6ICJvJ25laWwiLCAnY2xpZW50U2VjcmV0JzogJ2JhY2tcXHNsYXNoJ30===\n");
    const missing = await runMain(["credentials-string", "--client-id", "abc"]);
    expect(missing.code).toBe(2);
  });
});
