/**
 * docs/onboarding.md followed literally, in a copy of the project as a fresh clone has it: add the APAC hub tenant
 * (the page's YAML blocks and secret commands), remove a hub tenant, rename a platform tenant (the page's diff blocks),
 * each edit made to the copy's Pulumi.qa.yaml as a reader makes it. After each edit the page's offline commands run as
 * printed. After the three edits, the tests that read stack files pass in the copy: the tests use fixtures of their
 * own, never the file a team edits, so onboarding a tenant cannot turn `npm test` red. The edits come from the page's
 * own text, so the page and this test cannot drift.
 *
 * The tests run in the copy are the stack-reading ones that broke when the page's APAC edit was made to Pulumi.qa.yaml
 * before the tests had fixtures of their own (onboarding: a new region, preflight: a secure: value, foundation: qa's
 * publish steps); they run once, on the file with all three edits (a region added, a tenant gone, one renamed).
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import { PROJECT_ROOT } from "../support/cli";
import { copyProject, removeProjectCopy } from "../support/projectCopy";
import { applyConfigCommandToDocument } from "../support/pulumiConfig";
import { applyDiff, codeBlocks, notRunReason, pasteFragment, shellCommands, type Block } from "./snippets";

/** The test files that read stack files; each failed in a copy whose Pulumi.qa.yaml had the page's APAC tenant. */
const STACK_TESTS = ["components/onboarding", "components/preflight", "cli/foundation"].map((t) => `test/${t}.test.ts`);

const PAGE = "docs/onboarding.md";
const text = fs.readFileSync(path.join(PROJECT_ROOT, PAGE), "utf8");
const blocks = codeBlocks(PAGE, text);
const manifest = fs.readFileSync(path.join(PROJECT_ROOT, "package.json"), "utf8");
const scripts = (JSON.parse(manifest) as { scripts: Record<string, string> }).scripts;

/** The blocks of the section that starts with `heading`. */
function section(heading: string): Block[] {
  const start = text.split("\n").findIndex((l) => l === heading);
  if (start < 0) throw new Error(`${PAGE} has no section '${heading}'`);
  const next = text.split("\n").findIndex((l, i) => i > start && l.startsWith("## "));
  return blocks.filter((b) => b.line > start && (next < 0 || b.line < next));
}

let copy: string;
const stackFile = () => path.join(copy, "Pulumi.qa.yaml");

type Result = { code: number | null; stdout: string; stderr: string };

function run(command: string, args: string[], timeoutMs = 120_000): Promise<Result> {
  // A test run of its own in the copy: none of this run's vitest settings.
  const own = ([k]: [string, unknown]) => !k.startsWith("VITEST") && k !== "NODE_ENV" && k !== "TEST";
  const env = { ...Object.fromEntries(Object.entries(process.env).filter(own)), NO_COLOR: "1" };
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: copy, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The page's runnable commands of `heading`, as printed (`npx hub-export` is the copy's bin), each exit 0. */
async function offlineCommands(heading: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const block of section(heading).filter((b) => b.lang === "sh" && !notRunReason(b))) {
    for (const { documented, run: command } of shellCommands(block, scripts)) {
      if (command === null) continue;
      // A plan takes seconds on an idle machine, minutes on a loaded one.
      const r = await run("bash", ["-c", command], 300_000);
      expect(r.code, `${documented}: ${r.stderr}`).toBe(0);
      out[documented] = r.stdout;
    }
  }
  return out;
}

/** The stack-reading tests, in the copy, with the copy's edited Pulumi.qa.yaml. */
async function stackTestsPass(): Promise<void> {
  const vitest = path.join("node_modules", "vitest", "vitest.mjs");
  const r = await run(process.execPath, [vitest, "run", "--maxWorkers", "1", ...STACK_TESTS], 600_000);
  const summary = r.stdout
    .split("\n")
    .filter((l) => /Test Files|Tests /.test(l))
    .join("\n");
  const failed = r.stdout
    .split("\n")
    .filter((l) => /FAIL|✗|×/.test(l))
    .slice(0, 20)
    .join("\n");
  expect(r.code, `${summary}\n${failed}`).toBe(0);
  expect(summary).toMatch(new RegExp(`Test Files\\s+${STACK_TESTS.length} passed`));
}

function edit(change: (doc: YAML.Document) => void): void {
  const doc = YAML.parseDocument(fs.readFileSync(stackFile(), "utf8"));
  change(doc);
  fs.writeFileSync(stackFile(), doc.toString());
}

const config = () => (YAML.parse(fs.readFileSync(stackFile(), "utf8")) as { config: Record<string, any> }).config;
const hubTenantCodes = () => config()["hubExport:hubTenants"].map((t: { hubTenantCode: string }) => t.hubTenantCode);

beforeAll(() => {
  copy = copyProject(fs.mkdtempSync(path.join(os.tmpdir(), "docs-onboarding-")));
});
afterAll(() => copy && removeProjectCopy(copy));

describe("docs/onboarding.md, followed literally in a fresh copy", () => {
  it("adding the APAC hub tenant: its blocks, then its commands as printed; validate lists the examples", async () => {
    const blocksOfSection = section("## A new hub tenant");
    const yamlBlocks = blocksOfSection.filter((b) => b.lang === "yaml");
    expect(yamlBlocks).toHaveLength(2);
    edit((doc) => {
      for (const block of yamlBlocks) pasteFragment(doc, block);
      // The secret commands, as `pulumi config set` stores their prompted values (ciphertext).
      for (const block of blocksOfSection.filter((b) => b.lang === "sh" && notRunReason(b))) {
        const lines = block.lines.map((l) => l.replace(/\s+#\s.*$/, "").trim());
        const secrets = lines.filter((l) => l.startsWith("pulumi config set"));
        for (const line of secrets) applyConfigCommandToDocument(doc, line);
      }
    });
    const c = config();
    expect(hubTenantCodes()).toEqual(["ACME_US_QA", "ACME_EU_QA", "ACME_APAC_QA"]);
    expect(c["hubExport:hubTenants"][2].clientSecret).toEqual({ secure: expect.any(String) });

    const out = await offlineCommands("## A new hub tenant");
    const validate = out["npx hub-export validate --strict --stack qa"];
    expect(validate).toMatch(/^ok: stack qa: client ACME, 3 hub tenant\(s\) in US, EU, APAC, 4 platform tenant\(s\)/);
    // The page's example values are placeholders: listed to replace, as the committed file's are.
    const examples = ["hubTenants[2].hubTenantId", "hubTenants[2].clientId", "queues.APAC.clientAccessId"];
    for (const key of examples.map((k) => `hubExport:${k}`)) {
      expect(validate).toMatch(new RegExp(`\\n\\s+${key.replace(/[.[\]]/g, "\\$&")}: placeholder \\(example: `));
    }
    // Its secrets are set: not listed.
    expect(validate).not.toContain("hubExport:hubTenants[2].clientSecret");
    expect(validate).not.toContain("hubExport:queues.APAC.clientSecret");
    expect(out["npx hub-export plan --stack qa"]).toContain("HUB_API_CONFIG/9c7e5a3b-1d2f-4e6a-8b0c-2d4e6f8a0b1c/ERS");
  }, 900_000);

  it("removing a hub tenant: the page's first diff; the stack validates and plans", async () => {
    const diffs = section("## Changing and removing tenants").filter((b) => b.lang === "diff");
    expect(diffs).toHaveLength(2);
    fs.writeFileSync(stackFile(), applyDiff(fs.readFileSync(stackFile(), "utf8"), diffs[0]));
    const c = config();
    expect(hubTenantCodes()).toEqual(["ACME_US_QA", "ACME_APAC_QA"]);
    expect(Object.keys(c["hubExport:queues"])).toEqual(["US", "APAC"]);
    const out = await offlineCommands("## A new hub tenant");
    const validate = out["npx hub-export validate --strict --stack qa"];
    expect(validate).toMatch(/^ok: stack qa: client ACME, 2 hub tenant\(s\) in US, APAC, 3 platform tenant\(s\)/);
  }, 900_000);

  it("renaming a platform tenant: the page's second diff; the stack validates and plans; the tests pass on the edited file", async () => {
    const diffs = section("## Changing and removing tenants").filter((b) => b.lang === "diff");
    fs.writeFileSync(stackFile(), applyDiff(fs.readFileSync(stackFile(), "utf8"), diffs[1]));
    const platRegions = config()["hubExport:platTenants"].map((p: { platRegion: string }) => p.platRegion);
    expect(platRegions).toEqual(["US", "CAN", "AP"]);
    const out = await offlineCommands("## A new hub tenant");
    expect(out["npx hub-export plan --stack qa"]).toContain("HUB_PLAT_CONFIG/CAN");
    await stackTestsPass();
  }, 900_000);
});
