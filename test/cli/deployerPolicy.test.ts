/**
 * `hub-export deployer-policy` as a user runs it: the deployer's policy or the CI preview role's, for the stack's
 * account and region; a stack file that names no single account, or no region, is one line saying what to set.
 * test/components/deployerPolicy.test.ts evaluates the policies themselves.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import type { PolicyDocument } from "../../components/policies";
import { fixtureStackFile } from "../fixtures/stacks";
import { runMain } from "../support/cli";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-deployer-policy-cli-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The prod fixture with its `config:` changed, as `Pulumi.prod.yaml` in a folder of its own. */
function prodWith(edit: (config: Record<string, unknown>) => void): string {
  const doc = YAML.parse(fs.readFileSync(fixtureStackFile("prod"), "utf8")) as { config: Record<string, unknown> };
  edit(doc.config);
  const folder = fs.mkdtempSync(path.join(dir, "stack-"));
  const file = path.join(folder, "Pulumi.prod.yaml");
  fs.writeFileSync(file, YAML.stringify(doc));
  return file;
}

const actions = (policy: PolicyDocument) => new Set(policy.Statement.flatMap((s) => ([] as string[]).concat(s.Action)));

describe("hub-export deployer-policy", () => {
  it("prints the deployer's policy for the stack's account, and the preview role's reads of it", async () => {
    const deployer = await runMain(["deployer-policy", "--file", fixtureStackFile("prod")]);
    expect(deployer.code).toBe(0);
    const policy = JSON.parse(deployer.stdout) as PolicyDocument;
    const resources = policy.Statement.flatMap((s) => ([] as string[]).concat(s.Resource ?? []));
    // prod's account (the fixture's example) and region in every ARN that names one.
    for (const arn of resources.filter((r) => r !== "*" && !r.startsWith("arn:aws:s3:::")))
      expect(arn).toMatch(/^arn:aws:[a-z0-9-]+:(us-east-1)?:210987654321:/);

    const preview = await runMain(["deployer-policy", "--file", fixtureStackFile("prod"), "--role", "preview"]);
    expect(preview.code).toBe(0);
    const reads = actions(JSON.parse(preview.stdout) as PolicyDocument);
    expect(reads.size).toBeGreaterThan(0);
    expect([...reads].filter((a) => !actions(policy).has(a))).toEqual([]);
    expect([...reads].filter((a) => /:(Put|Create|Delete|Update|Tag|Untag|Set|Schedule)/.test(a))).toEqual([]);
  }, 120_000);

  it("refuses another role in one line", async () => {
    const result = await runMain(["deployer-policy", "--file", fixtureStackFile("prod"), "--role", "admin"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "hub-export deployer-policy: --role must be one of deployer, preview, got 'admin' (see 'hub-export deployer-policy --help')\n",
    );
  });

  it("says which account or region to set when the stack file names none, or several accounts", async () => {
    const cases: [string, (c: Record<string, unknown>) => void, RegExp][] = [
      [
        "no account",
        (c) => delete c["aws:allowedAccountIds"],
        /^Pulumi\.prod\.yaml: aws:allowedAccountIds is not set: the policy names the stack's account; pulumi config set --path 'aws:allowedAccountIds\[0\]' <12-digit account id>\n$/,
      ],
      [
        "two accounts",
        (c) => (c["aws:allowedAccountIds"] = ["210987654321", "111111111111"]),
        /^Pulumi\.prod\.yaml: aws:allowedAccountIds lists 2 accounts: the policy names one; keep the account the stack deploys to\n$/,
      ],
      [
        "no region",
        (c) => delete c["aws:region"],
        /^Pulumi\.prod\.yaml: aws:region is not set: the policy names the stack's region; pulumi config set aws:region <region>\n$/,
      ],
    ];
    for (const [what, edit, message] of cases) {
      const result = await runMain(["deployer-policy", "--file", prodWith(edit)]);
      expect(result.stderr, what).toMatch(message);
      expect(result.code, what).toBe(1);
      expect(result.stdout, what).toBe("");
    }
  });
});
