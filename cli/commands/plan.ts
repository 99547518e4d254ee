import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { defineCommand } from "../command";
import { stackOptions, stackSelection } from "../stackOptions";
import { stackFilePath } from "../../config/load";
import { UserError } from "../../core/errors";
import type { PlanJson } from "../../components/planner/format";

/** An earlier `plan --json`, checked enough to diff against. */
function readPlanJson(file: string): PlanJson {
  let plan: PlanJson;
  try {
    plan = JSON.parse(fs.readFileSync(file, "utf8")) as PlanJson;
  } catch (err) {
    throw new UserError(
      `--diff-from ${file}: cannot read a plan (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); give the output of 'hub-export plan --json'`,
    );
  }
  if (!Array.isArray(plan?.resources))
    throw new UserError(`--diff-from ${file}: not the output of 'hub-export plan --json' (no resources)`);
  return plan;
}

/** The stack file as git HEAD has it, or why there is none to compare with (not in a git checkout, never committed). */
export function committedText(file: string): { text: string } | { none: string } {
  const git = (args: string[]) =>
    execFileSync("git", args, {
      cwd: path.dirname(file),
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      maxBuffer: 64 * 1024 * 1024,
    });
  let relative: string;
  try {
    relative = path
      .relative(git(["rev-parse", "--show-toplevel"]).trim(), fs.realpathSync(file))
      .split(path.sep)
      .join("/");
  } catch {
    return { none: `${path.basename(file)} is not in a git checkout` };
  }
  try {
    return { text: git(["show", `HEAD:${relative}`]) };
  } catch {
    return { none: `git HEAD has no ${relative}` };
  }
}

/** `hub-export plan`: the real program under the Pulumi SDK's mocks (no cloud credentials, no Pulumi CLI). */
export default defineCommand({
  summary:
    "Show what 'pulumi up' would change for a stack, offline: the stack file's edits against git HEAD (or a saved plan), or every resource (secrets masked)",
  options: {
    ...stackOptions,
    full: {
      type: "boolean",
      description: "List every resource 'pulumi up' would register, with its inputs, instead of the change",
      example: "--full",
    },
    json: {
      type: "boolean",
      description: "Print the plan as one JSON document (resources with type, name, parent and inputs)",
      example: "--json",
    },
    "diff-from": {
      type: "string",
      value: "PATH",
      description:
        "Print what changed since an earlier plan, the --json output of another checkout (what CI comments on a pull request), as Markdown",
      defaultText: "the stack file as git HEAD has it, when the working copy's differs",
      example: "--diff-from plan-main.json",
    },
  },
  details: [
    "Without --full, --json or --diff-from: when the working copy's stack file differs from git HEAD's (an edit not committed yet), both are planned with this checkout's code and the change is printed: first how many resources are added, changed and deleted, then each one, changed inputs key by key; text documents (the rendered pipeline, the hub checklist, SQL, policies) as a unified diff of the changed lines; secrets as (secret, changed), never their value. Otherwise it says there is nothing to compare and how many resources the stack has.",
  ],
  examples: [
    {
      command: "hub-export plan --stack qa",
      does: "after an edit of Pulumi.qa.yaml (a new tenant): what it adds, changes and deletes, against the committed file",
    },
    { command: "hub-export plan --stack qa --full", does: "every resource of qa with its inputs, secrets masked" },
    {
      command: "hub-export plan --stack prod --json > plan.json",
      does: "every resource and input of prod, secrets masked, for a script or a diff",
    },
    {
      command: "hub-export plan --stack qa --diff-from plan-main-qa.json",
      does: "the resources this checkout adds, changes and deletes in qa compared with main's plan",
    },
  ],
  async run(values, io) {
    const selection = stackSelection(values);
    // Loaded here, not at the top: `hub-export --help` must not pay for the Pulumi SDK.
    const { planStackFile } = await import("../../components/planner/index.js");
    const { planJson, formatPlanText, formatPlanDiff, formatResourceCounts } =
      await import("../../components/planner/format.js");
    const { planChanges, changeCounts, changeLines } = await import("../../components/planner/diff.js");
    const file = path.resolve(selection.file ?? stackFilePath(selection.stack!));
    const target = values.file ? { file } : { stack: selection.stack };
    const saved = values["diff-from"] === undefined ? undefined : readPlanJson(values["diff-from"]);
    // Config problems are reported as `hub-export validate` reports them.
    const run = await planStackFile(target);
    if (saved || values.json || values.full) {
      io.stdout.write(
        saved
          ? formatPlanDiff(saved, planJson(run))
          : values.json
            ? `${JSON.stringify(planJson(run), null, 2)}\n`
            : formatPlanText(run),
      );
      return 0;
    }

    const name = path.basename(file);
    const committed = committedText(file);
    if ("none" in committed || committed.text === fs.readFileSync(file, "utf8")) {
      const nothing =
        "none" in committed
          ? `${committed.none}: nothing to compare with`
          : `${name} is as git HEAD has it: no change to show`;
      io.stdout.write(
        [
          `Stack ${run.stack}: ${run.resources.length} resources; ${nothing}.`,
          "  '--full' lists every resource with its inputs; '--diff-from PLAN' compares with a saved 'plan --json'.",
          "",
          ...formatResourceCounts(run),
          "",
        ].join("\n"),
      );
      return 0;
    }
    // HEAD's file, planned from a folder of its own under the stack's name (its relative paths are the project's).
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-plan-head-"));
    const headFile = path.join(dir, name);
    fs.writeFileSync(headFile, committed.text);
    // Named as the working copy's: --stack checks the environment as it does for that file, --file does not.
    const before = await planStackFile({ file: headFile, stack: values.file ? undefined : run.stack })
      .catch((err: Error) => {
        const why = err.message
          .replace(/\s*\n\s*/g, " ")
          .trim()
          .replace(headFile, `${name} at git HEAD`);
        const full = values.file ? `--file ${values.file}` : `--stack ${run.stack}`;
        throw new UserError(
          `the committed ${name} (git HEAD) cannot be planned, so there is no change to show: ${why}; 'hub-export plan ${full} --full' lists the working copy's plan`,
        );
      })
      .finally(() => fs.rmSync(dir, { recursive: true, force: true }));
    const changes = planChanges(before.resources, run.resources);
    io.stdout.write(
      [
        `Stack ${run.stack}: ${changeCounts(changes)}`,
        `  ${name} in the working copy against git HEAD's, both planned offline with this checkout's code (secrets masked);`,
        "  '--full' lists every resource; 'pulumi preview --diff' compares with what is deployed.",
        "",
        ...changeLines(changes),
        "",
      ].join("\n"),
    );
    return 0;
  },
});
