/**
 * Every code block of the README and docs/, checked in-process (test/docs/snippets.ts has the rules): each is run by
 * test/docs/commands.e2e.test.ts (shell), checked here (a stack config fragment validates, JSON parses, a picture is a
 * diagram, onboarding.md's edits apply and leave a stack that validates and plans), or says on its first line why it
 * cannot run here. The stack files the blocks edit are the tests' own fixtures, never the users'.
 */
import { afterAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import YAML from "yaml";
import { PROJECT_ROOT, runMain } from "../support/cli";
import { fixtureStackFile } from "../fixtures/stacks";
import { FIXED_SOURCE_HASH } from "../fixtures/plan";
import { engineConfigFromStackFile, runProgramUnderMocks } from "../../components/planner";
import { hubExportProgram } from "../../components/program";
import { loadStackConfig } from "../../config/load";
import { environmentIssues } from "../../config/environment";
import { applyConfigCommandToDocument } from "../support/pulumiConfig";
import {
  addFragment,
  applyDiff,
  codeBlocks,
  DIAGRAMS,
  notRunReason,
  sectionBlocks,
  PAGES,
  pasteFragment,
  pulumiWithoutStack,
  SHELL,
  shellCommands,
  stackConfigFragment,
  where,
} from "./snippets";

const read = (file: string) => fs.readFileSync(path.join(PROJECT_ROOT, file), "utf8");
const scripts = JSON.parse(read("package.json")).scripts as Record<string, string>;
const blocksOf = (file: string) => codeBlocks(file, read(file));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "docs-blocks-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("the docs' code blocks", () => {
  it("the rules can fail: an unmarked command the test cannot run, an unknown YAML block, a short reason, a pulumi command without --stack", () => {
    const [pulumi, yaml, short, picture] = codeBlocks(
      "example.md",
      [
        "```sh",
        "pulumi up --stack qa",
        "```",
        "```yaml",
        "name: hub-export",
        "```",
        "```sh",
        "# not run here: AWS",
        "pulumi up",
        "```",
        "```mermaid",
        "pie",
        "```",
      ].join("\n"),
    );
    expect(() => shellCommands(pulumi, scripts)).toThrow(
      "example.md:1: 'pulumi up --stack qa' is neither run by the docs test nor marked",
    );
    expect(() => stackConfigFragment(yaml)).toThrow(
      "example.md:4: a YAML block is a fragment of a stack file's config",
    );
    expect(notRunReason(short)).toBeUndefined();
    expect(pulumiWithoutStack(short)).toEqual(["pulumi up"]);
    expect(DIAGRAMS.test(picture.lines[0])).toBe(false);
    expect(
      shellCommands(codeBlocks("x.md", "```sh\nnpm run bench -- --employees 1000000   # a million\n```")[0], scripts)[0]
        .run,
    ).toBe(`${scripts.bench} --employees 300`);
  });

  it("`npm test` is the README's test command and the one CI's .ci/run calls", () => {
    const readme = shellCommands(blocksOf("README.md")[0], scripts).map((c) => c.documented);
    expect(readme).toEqual(["npm ci && npm start", "npm test"]);
    expect(scripts.test).toBe("vitest run");
    const ci = read(".ci/run")
      .split("\n")
      .filter((l) => l.trim() && !l.startsWith("#"));
    expect(ci.at(-1)).toBe("npm test");
  });

  it("every block that is not run says why on its first line, and names its stack in every pulumi command", () => {
    const problems: string[] = [];
    for (const block of PAGES.flatMap(blocksOf)) {
      for (const line of pulumiWithoutStack(block))
        problems.push(`${where(block)}: '${line}' acts on whichever stack is selected: add --stack`);
      if (SHELL.has(block.lang) && !notRunReason(block)) {
        try {
          shellCommands(block, scripts);
        } catch (err) {
          problems.push((err as Error).message);
        }
      }
      if (notRunReason(block) || SHELL.has(block.lang) || block.lang === "yaml") continue;
      if (block.lang === "mermaid") {
        if (!DIAGRAMS.test(block.lines[0] ?? ""))
          problems.push(`${where(block)}: a picture starts with 'flowchart <direction>'`);
        // Mermaid reads HTML entities as text: its own codes are #lt; and #gt;, and <br/> its only tag here.
        for (const line of block.lines.filter((l) => /&[a-z]+;|<(?!br\/>)/.test(l.replace(/-->|<-->/g, ""))))
          problems.push(
            `${where(block)}: '${line.trim()}': write #lt; and #gt; (mermaid's codes), and no tag but <br/>`,
          );
      } else if (block.lang === "json") {
        try {
          JSON.parse(block.lines.join("\n"));
        } catch (err) {
          problems.push(`${where(block)}: ${(err as Error).message}`);
        }
      } else if (block.lang === "diff") {
        // An edit of the qa stack file: the onboarding tests below apply onboarding.md's, in order, as a reader does.
        if (block.file !== "docs/onboarding.md")
          problems.push(
            `${where(block)}: a diff block is an onboarding edit: only docs/onboarding.md has them (its test applies them)`,
          );
      } else
        problems.push(
          `${where(block)}: a '${block.lang || "plain"}' block is neither run nor marked '# not run here: <why>'`,
        );
    }
    expect(problems).toEqual([]);
  });

  it("the stack config fragments of each page, added to the qa fixture in order, validate with --strict", async () => {
    const problems: string[] = [];
    let checked = 0;
    for (const page of PAGES) {
      const fragments = blocksOf(page).filter((b) => b.lang === "yaml" && !notRunReason(b));
      if (!fragments.length) continue;
      // The tests' own qa file: the repository's may already hold what a page adds (a team followed it).
      const doc = YAML.parse(fs.readFileSync(fixtureStackFile("qa"), "utf8")) as { config: Record<string, unknown> };
      for (const block of fragments) {
        try {
          addFragment(doc.config, stackConfigFragment(block));
        } catch (err) {
          problems.push((err as Error).message);
        }
      }
      // A folder per page: the stack is named after its file, and must be qa for qa's environment.
      const file = path.join(dir, `fragments-${path.basename(page, ".md")}`, "Pulumi.qa.yaml");
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, YAML.stringify(doc));
      const r = await runMain(["validate", "--strict", "--file", file]);
      if (r.code !== 0)
        problems.push(`${where(fragments[0])}: the YAML blocks of ${page} do not validate: ${r.stderr}`);
      checked += fragments.length;
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThanOrEqual(4);
  });
});

/**
 * docs/onboarding.md followed literally on a copy of the qa fixture: add the APAC hub tenant (the page's YAML blocks and
 * secret commands), remove a hub tenant, rename a platform tenant (the page's diff blocks), each edit made as a reader
 * makes it; after each, the stack validates and plans. The page's commands themselves run once, as printed, in
 * test/docs/commands.e2e.test.ts. The edits come from the page's own text, so the page and this test cannot drift.
 */
describe("docs/onboarding.md's edits, in order", () => {
  const PAGE = "docs/onboarding.md";
  const text = read(PAGE);
  const blocks = codeBlocks(PAGE, text);
  const stackFile = path.join(dir, "onboarding-edits", "Pulumi.qa.yaml");
  fs.mkdirSync(path.dirname(stackFile), { recursive: true });
  fs.copyFileSync(fixtureStackFile("qa"), stackFile);
  const config = () => (YAML.parse(fs.readFileSync(stackFile, "utf8")) as { config: Record<string, any> }).config;
  const hubTenantCodes = () => config()["hubExport:hubTenants"].map((t: { hubTenantCode: string }) => t.hubTenantCode);
  const diffs = () => sectionBlocks(text, blocks, "## Changing and removing tenants").filter((b) => b.lang === "diff");
  const validateAndPlan = async () => {
    const validate = await runMain(["validate", "--strict", "--file", stackFile]);
    expect(validate.code, validate.stderr).toBe(0);
    const plan = await runMain(["plan", "--full", "--file", stackFile]);
    expect(plan.code, plan.stderr).toBe(0);
    return { validate: validate.stdout, plan: plan.stdout };
  };

  it("adding the APAC hub tenant: its blocks and secret commands; validate lists the page's examples to replace", async () => {
    const section = sectionBlocks(text, blocks, "## A new hub tenant");
    const yamlBlocks = section.filter((b) => b.lang === "yaml");
    expect(yamlBlocks).toHaveLength(2);
    const doc = YAML.parseDocument(fs.readFileSync(stackFile, "utf8"));
    for (const block of yamlBlocks) pasteFragment(doc, block);
    // The secret commands, as `pulumi config set` stores their prompted values (ciphertext).
    for (const block of section.filter((b) => b.lang === "sh" && notRunReason(b))) {
      const lines = block.lines.map((l) => l.replace(/\s+#\s.*$/, "").trim());
      for (const line of lines.filter((l) => l.startsWith("pulumi config set")))
        applyConfigCommandToDocument(doc, line);
    }
    fs.writeFileSync(stackFile, doc.toString());
    expect(hubTenantCodes()).toEqual(["ACME_US_QA", "ACME_EU_QA", "ACME_APAC_QA"]);
    expect(config()["hubExport:hubTenants"][2].clientSecret).toEqual({ secure: expect.any(String) });

    const { validate, plan } = await validateAndPlan();
    expect(validate).toMatch(/^ok: .* client ACME, 3 hub tenant\(s\) in US, EU, APAC, 4 platform tenant\(s\)/);
    // The page's example values are placeholders: listed to replace, as the committed file's are.
    const examples = ["hubTenants[2].hubTenantId", "hubTenants[2].clientId", "queues.APAC.clientAccessId"];
    for (const key of examples.map((k) => `hubExport:${k}`))
      expect(validate).toMatch(new RegExp(`\\n\\s+${key.replace(/[.[\]]/g, "\\$&")}: placeholder \\(example: `));
    // Its secrets are set: not listed.
    expect(validate).not.toContain("hubExport:hubTenants[2].clientSecret");
    expect(validate).not.toContain("hubExport:queues.APAC.clientSecret");
    expect(plan).toContain("HUB_API_CONFIG/9c7e5a3b-1d2f-4e6a-8b0c-2d4e6f8a0b1c/ERS");
  });

  it("removing a hub tenant: the page's first diff; the stack validates and plans", async () => {
    expect(diffs()).toHaveLength(2);
    fs.writeFileSync(stackFile, applyDiff(fs.readFileSync(stackFile, "utf8"), diffs()[0]));
    expect(hubTenantCodes()).toEqual(["ACME_US_QA", "ACME_APAC_QA"]);
    expect(Object.keys(config()["hubExport:queues"])).toEqual(["US", "APAC"]);
    const { validate } = await validateAndPlan();
    expect(validate).toMatch(/^ok: .* client ACME, 2 hub tenant\(s\) in US, APAC, 3 platform tenant\(s\)/);
  });

  it("renaming a platform tenant: the page's second diff; the stack validates and plans", async () => {
    fs.writeFileSync(stackFile, applyDiff(fs.readFileSync(stackFile, "utf8"), diffs()[1]));
    const platRegions = config()["hubExport:platTenants"].map((p: { platRegion: string }) => p.platRegion);
    expect(platRegions).toEqual(["US", "CAN", "AP"]);
    expect((await validateAndPlan()).plan).toContain("HUB_PLAT_CONFIG/CAN");
  });

  it("after the three edits, what the tests that read the repository's stack files check still holds; no other test reads them", async () => {
    // Onboarding a tenant must not turn `npm test` red: these are the only tests that read the users' stack files,
    // and each checks only what any valid stack file has. A test that reads them must join this list and its check.
    const readers: Record<string, string> = {
      "test/cli/foundation.test.ts": "validate exits 0",
      "test/components/preflight.test.ts": "the offline plan runs, validate exits 0",
      "test/config/validate.test.ts": "no environment issue",
      "test/operate/runNow.test.ts": "none: --stack asks the Pulumi CLI, which is not installed",
      "test/cli/launcher.e2e.test.ts": "none: a copy without node_modules stops before reading it",
    };
    const reads =
      /"--stack", (?:"(?:qa|prod)"|stack)\]|stackFilePath\(|availableStacks\(\)\)|loadStackConfig\(\{ stack \}\)/;
    const testFiles = fs.readdirSync(path.join(PROJECT_ROOT, "test"), { recursive: true, encoding: "utf8" });
    const found = testFiles
      .filter((f) => /\.test\.ts$/.test(f) && !f.startsWith("docs/"))
      .map((f) => `test/${f}`)
      .filter((f) => reads.test(read(f)));
    expect(found.sort()).toEqual(Object.keys(readers).sort());

    const validate = await runMain(["validate", "--strict", "--file", stackFile]);
    expect(validate.code, validate.stderr).toBe(0);
    expect(validate.stdout).toMatch(/^ok: /);
    expect(environmentIssues(loadStackConfig({ file: stackFile, stack: "qa" }))).toEqual([]);
    const offline = await runProgramUnderMocks({
      stack: "qa",
      config: engineConfigFromStackFile(stackFile).config,
      program: () => hubExportProgram({ offline: true, taskSourceHash: FIXED_SOURCE_HASH }),
    });
    expect(offline.resources.some((r) => r.type === "aws:scheduler/schedule:Schedule")).toBe(true);
  });
});
