/**
 * Snippets paste: every code block of the README and docs/ is run here, or checked, or says on its first line why it
 * cannot run here (test/docs/snippets.ts has the rules). The shell blocks run, page by page in reading order, in one
 * copy of the project, so that `npm start` and `status` share one `.local/` there and the checkout's own is left alone.
 * The copy has the stack files as shipped (test/support/projectCopy.ts): the docs describe those, not a team's edits.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import YAML from "yaml";
import { PROJECT_ROOT } from "../support/cli";
import { fixtureStackFile } from "../fixtures/stacks";
import { copyProject, removeProjectCopy } from "../support/projectCopy";
import {
  addFragment,
  codeBlocks,
  DIAGRAMS,
  notRunReason,
  pulumiWithoutStack,
  shellCommands,
  stackConfigFragment,
  where,
  type Block,
} from "./snippets";

/** The pages a newcomer reads, in the order the README sends them there. */
const PAGES = [
  "README.md",
  "docs/developing.md",
  "docs/pulumi.md",
  "docs/pulumi-reference.md",
  "docs/onboarding.md",
  "docs/operating.md",
  "docs/hub-contract.md",
];
const SHELL = new Set(["sh", "bash", "shell", "console"]);
const read = (file: string) => fs.readFileSync(path.join(PROJECT_ROOT, file), "utf8");
const scripts = JSON.parse(read("package.json")).scripts as Record<string, string>;
const blocksOf = (file: string) => codeBlocks(file, read(file));

let copy: string;
/** The copy's task bundle, built once: `npm start` finds it fresh, and the benchmarks run it (BENCH_TASK_BUNDLE). */
let bundle: string;

beforeAll(() => {
  copy = copyProject(fs.mkdtempSync(path.join(os.tmpdir(), "docs-snippets-")));
  execFileSync(process.execPath, ["scripts/build-task.js"], { cwd: copy, stdio: "ignore" });
  bundle = path.join(copy, "dist", "task", "index.js");
}, 120_000);
afterAll(() => removeProjectCopy(copy));

const commandEnv = () => ({ ...process.env, NO_COLOR: "1", BENCH_TASK_BUNDLE: bundle });

/** A failure line for a command that did not exit as documented (0 unless its comment says `exits N`), or nothing. */
function failure(
  block: Block,
  documented: string,
  status: number | string | null,
  stdout: string,
  stderr: string,
  exits = 0,
): string | undefined {
  if (status === exits && !/internal error/.test(stderr)) return undefined;
  return `${where(block)}: '${documented}' exited ${status}: ${(stderr || stdout).trim().split("\n").slice(-3).join(" | ")}`;
}

/** A hang guard per command: a benchmark or a plan took over 90 s at a load of 16 on two cores. */
const COMMAND_TIMEOUT_MS = 300_000;

/** Runs one command with bash in the copy; returns a failure line, or nothing. */
function runInCopy(block: Block, documented: string, command: string): string | undefined {
  const r = spawnSync("bash", ["-c", command], {
    cwd: copy,
    encoding: "utf8",
    timeout: COMMAND_TIMEOUT_MS,
    env: commandEnv(),
  });
  return failure(block, documented, r.status ?? r.signal, r.stdout, r.stderr);
}

/** The same, without blocking: two lanes of commands share the machine's two cores. */
function runInCopyAsync(block: Block, documented: string, command: string, exits = 0): Promise<string | undefined> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = spawn("bash", ["-c", command], { cwd: copy, env: commandEnv(), timeout: COMMAND_TIMEOUT_MS });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("close", (code, signal) => {
      if (process.env.DOCS_TIMES) console.log(((Date.now() - t0) / 1000).toFixed(1), command);
      resolve(failure(block, documented, code ?? signal, stdout, stderr, exits));
    });
  });
}

describe("snippets paste", () => {
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
        // An edit of the qa stack file: test/docs/onboarding.e2e.test.ts applies onboarding.md's, in order, as a reader does.
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

  it("the stack config fragments of each page, added to the qa fixture in order, validate with --strict", () => {
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
      const file = path.join(`docs-${path.basename(page, ".md")}`, "Pulumi.qa.yaml");
      fs.mkdirSync(path.join(copy, path.dirname(file)), { recursive: true });
      fs.writeFileSync(path.join(copy, file), YAML.stringify(doc));
      const failure = runInCopy(
        fragments[0],
        `validate --strict with the YAML blocks of ${page}`,
        `node bin/hub-export.js validate --strict --file ${file}`,
      );
      if (failure) problems.push(failure);
      checked += fragments.length;
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThanOrEqual(4);
    // A validate per page: 20 s each at a load of 16.
  }, 600_000);

  it("the shell blocks run in a copy of the project, page by page", async () => {
    const problems: string[] = [];
    const done = new Set<string>();
    // The local state's commands (`local`, `status`, `rm`) run in reading order in one lane, the others in another.
    const stateful: Array<() => Promise<string | undefined>> = [];
    const stateless: Array<() => Promise<string | undefined>> = [];
    for (const block of PAGES.flatMap(blocksOf).filter((b) => SHELL.has(b.lang) && !notRunReason(b))) {
      let commands;
      try {
        commands = shellCommands(block, scripts);
      } catch (err) {
        problems.push((err as Error).message);
        continue;
      }
      for (const { documented, run, exits } of commands) {
        if (run === null) continue;
        // A command that changes nothing runs once, however many pages show it.
        const changesState = /\blocal\b|\brm\b/.test(run);
        if (!changesState && done.has(run)) continue;
        done.add(run);
        (/\blocal\b|\brm\b|\bstatus\b/.test(run) ? stateful : stateless).push(() =>
          runInCopyAsync(block, documented, run, exits),
        );
      }
    }
    const lane = async (commands: typeof stateful) => {
      for (const command of commands) {
        const failed = await command();
        if (failed) problems.push(failed);
      }
    };
    await Promise.all([lane(stateful), lane(stateless)]);
    expect(problems).toEqual([]);
    expect(stateful.length + stateless.length).toBeGreaterThanOrEqual(15);
    // Local starts, benchmarks and plans, operating.md's rehearsal of a failed run: a loaded machine needs the margin.
  }, 1_200_000);
});
