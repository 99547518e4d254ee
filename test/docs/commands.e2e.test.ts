/**
 * Snippets paste: every runnable shell command of the README and docs/ runs once, as printed, in one copy of the
 * project as a fresh clone has it (test/support/projectCopy.ts: the stack files as shipped), so that `npm start` and
 * `status` share one `.local/` there and the checkout's own is left alone. onboarding.md's commands run after its
 * edit of Pulumi.qa.yaml (adding the APAC hub tenant), as a reader runs them; test/docs/blocks.test.ts checks every
 * block in-process and follows the page's later edits.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import YAML from "yaml";
import { PROJECT_ROOT } from "../support/cli";
import { copyProject, removeProjectCopy } from "../support/projectCopy";
import { applyConfigCommandToDocument } from "../support/pulumiConfig";
import {
  codeBlocks,
  notRunReason,
  PAGES,
  pasteFragment,
  sectionBlocks,
  SHELL,
  shellCommands,
  where,
  type Block,
} from "./snippets";

const read = (file: string) => fs.readFileSync(path.join(PROJECT_ROOT, file), "utf8");
const scripts = JSON.parse(read("package.json")).scripts as Record<string, string>;
const blocksOf = (file: string) => codeBlocks(file, read(file));
const ONBOARDING = "docs/onboarding.md";

let copy: string;
/** The run's task bundle, put where the copy's `npm start` looks for it; the benchmarks run it (BENCH_TASK_BUNDLE). */
let bundle: string;

beforeAll(() => {
  copy = copyProject(fs.mkdtempSync(path.join(os.tmpdir(), "docs-commands-")));
  bundle = path.join(copy, "dist", "task", "index.js");
  fs.mkdirSync(path.dirname(bundle), { recursive: true });
  // Copied after the sources: newer than each of them, so `npm start` does not build it again.
  fs.copyFileSync(inject("taskBundle"), bundle);
}, 120_000);
afterAll(() => copy && removeProjectCopy(copy));

/** A hang guard per command: a benchmark or a plan took over 90 s at a load of 16 on two cores. */
const COMMAND_TIMEOUT_MS = 300_000;

interface Ran {
  failure?: string;
  stdout: string;
}

/** Runs one command with bash in the copy: its output, and a failure line unless it exited as documented. */
function runInCopy(block: Block, documented: string, command: string, exits = 0): Promise<Ran> {
  return new Promise((resolve) => {
    const env = { ...process.env, NO_COLOR: "1", BENCH_TASK_BUNDLE: bundle };
    const child = spawn("bash", ["-c", command], { cwd: copy, env, timeout: COMMAND_TIMEOUT_MS });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("close", (code, signal) => {
      const status = code ?? signal;
      const ok = status === exits && !/internal error/.test(stderr);
      const last = (stderr || stdout).trim().split("\n").slice(-3).join(" | ");
      resolve({ stdout, failure: ok ? undefined : `${where(block)}: '${documented}' exited ${status}: ${last}` });
    });
  });
}

/** The runnable commands of `blocks`, in order. */
function commandsOf(blocks: Block[]) {
  return blocks
    .filter((b) => SHELL.has(b.lang) && !notRunReason(b))
    .flatMap((block) => shellCommands(block, scripts).map((command) => ({ block, ...command })))
    .filter((c): c is typeof c & { run: string } => c.run !== null);
}

describe("the docs' commands, run as printed", () => {
  it("every page's commands, in a copy of the project, page by page", async () => {
    const problems: string[] = [];
    const done = new Set<string>();
    // The local state's commands (`local`, `status`, `rm`) run in reading order in one lane, the others in another.
    const stateful: Array<() => Promise<Ran>> = [];
    const stateless: Array<() => Promise<Ran>> = [];
    for (const { block, documented, run, exits } of commandsOf(
      PAGES.filter((p) => p !== ONBOARDING).flatMap(blocksOf),
    )) {
      // A command that changes nothing runs once, however many pages show it.
      const changesState = /\blocal\b|\brm\b/.test(run);
      if (!changesState && done.has(run)) continue;
      done.add(run);
      (/\blocal\b|\brm\b|\bstatus\b/.test(run) ? stateful : stateless).push(() =>
        runInCopy(block, documented, run, exits),
      );
    }
    const lane = async (commands: typeof stateful) => {
      for (const command of commands) {
        const { failure } = await command();
        if (failure) problems.push(failure);
      }
    };
    await Promise.all([lane(stateful), lane(stateless)]);
    expect(problems).toEqual([]);
    expect(stateful.length + stateless.length).toBeGreaterThanOrEqual(15);
    // Local starts, benchmarks and plans, operating.md's rehearsal of a failed run: a loaded machine needs the margin.
  }, 1_200_000);

  it("onboarding.md's commands, after its edit adding the APAC hub tenant to Pulumi.qa.yaml", async () => {
    const text = read(ONBOARDING);
    const section = sectionBlocks(text, codeBlocks(ONBOARDING, text), "## A new hub tenant");
    const stackFile = path.join(copy, "Pulumi.qa.yaml");
    const shipped = fs.readFileSync(stackFile, "utf8");
    const doc = YAML.parseDocument(shipped);
    for (const block of section.filter((b) => b.lang === "yaml")) pasteFragment(doc, block);
    for (const block of section.filter((b) => b.lang === "sh" && notRunReason(b))) {
      const lines = block.lines.map((l) => l.replace(/\s+#\s.*$/, "").trim());
      for (const line of lines.filter((l) => l.startsWith("pulumi config set")))
        applyConfigCommandToDocument(doc, line);
    }
    fs.writeFileSync(stackFile, doc.toString());
    try {
      const out: Record<string, string> = {};
      for (const { block, documented, run, exits } of commandsOf(codeBlocks(ONBOARDING, text))) {
        const ran = await runInCopy(block, documented, run, exits);
        expect(ran.failure).toBeUndefined();
        out[documented] = ran.stdout;
      }
      expect(out["npx hub-export validate --strict --stack qa"]).toMatch(
        /^ok: stack qa: client ACME, 3 hub tenant\(s\) in US, EU, APAC, 4 platform tenant\(s\)/,
      );
      // Against git HEAD's file: the change, the new hub tenant's rows among it.
      expect(out["npx hub-export plan --stack qa"]).toContain(
        "HUB_API_CONFIG/9c7e5a3b-1d2f-4e6a-8b0c-2d4e6f8a0b1c/ERS",
      );
      expect(out["npx hub-export hub checklist --stack qa"]).toContain("ACME_APAC_QA");
    } finally {
      fs.writeFileSync(stackFile, shipped);
    }
  }, 600_000);
});
