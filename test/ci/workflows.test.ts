/**
 * CI without handing secrets to unreviewed code: a pull request gets the offline plan (no secret, no cloud
 * credential, no write token), posted by a workflow that never runs its code; the real previews run only in GitHub
 * environments whose required reviewers approve each run (qa for pull requests, prod from main). Every action is
 * pinned by commit, with its version in a comment; CI tests on the image's Node.js and the development one.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import YAML from "yaml";

const ROOT = path.join(__dirname, "..", "..");
const WORKFLOWS = path.join(ROOT, ".github", "workflows");

const { imageNode } = require("../../scripts/image-node.js") as { imageNode: () => { version: string; major: number } };

type Step = {
  name?: string;
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
};
type Job = {
  name?: string;
  environment?: string;
  if?: string;
  needs?: string;
  permissions?: Record<string, string>;
  env?: Record<string, string>;
  strategy?: { matrix: Record<string, unknown[]> };
  steps: Step[];
};
type Workflow = { on: Record<string, unknown>; permissions?: Record<string, string>; jobs: Record<string, Job> };
const load = (file: string) => ({
  text: fs.readFileSync(path.join(WORKFLOWS, file), "utf8"),
  doc: YAML.parse(fs.readFileSync(path.join(WORKFLOWS, file), "utf8")) as Workflow,
});
const FILES = fs
  .readdirSync(WORKFLOWS)
  .filter((f) => /\.ya?ml$/.test(f))
  .sort();

/** The environments whose required reviewers gate every run (docs/pulumi-reference.md, "CI", says so for each). */
const REVIEWED_ENVIRONMENTS = ["qa", "prod"];

describe("CI workflows", () => {
  it("are the four expected, and none runs pull request code with the base repository's token or secrets", () => {
    expect(FILES).toEqual(["plan-comment.yml", "preview-prod.yml", "preview.yml", "test.yml"]);
    for (const file of FILES) expect(load(file).doc.on, file).not.toHaveProperty("pull_request_target");
  });

  it("give a job a pull request starts no secret and no cloud credential unless a reviewed environment gates it", () => {
    for (const file of FILES) {
      const { doc } = load(file);
      if (!("pull_request" in doc.on)) continue;
      expect(doc.permissions, file).toEqual({ contents: "read" });
      for (const [name, job] of Object.entries(doc.jobs)) {
        const text = JSON.stringify(job);
        if (job.environment === undefined) {
          expect(text, `${file} ${name}`).not.toMatch(
            /secrets\.|id-token|vars\.AWS_|configure-aws-credentials|pulumi\/actions|PULUMI_ACCESS_TOKEN/,
          );
          expect(
            Object.values(job.permissions ?? {}).filter((p) => p !== "read"),
            `${file} ${name}`,
          ).toEqual([]);
        } else {
          // Approved by a maintainer before it starts; forks never get there (GitHub gives them no secrets anyway).
          expect(REVIEWED_ENVIRONMENTS, `${file} ${name}`).toContain(job.environment);
          expect(job.if, `${file} ${name}`).toBe("github.event.pull_request.head.repo.full_name == github.repository");
        }
      }
    }
    const docs = fs.readFileSync(path.join(ROOT, "docs", "pulumi-reference.md"), "utf8");
    for (const env of REVIEWED_ENVIRONMENTS)
      expect(docs).toMatch(new RegExp(`\\| environment \`${env}\` \\| \\*\\*required reviewers\\*\\*`));
  });

  it("comment the offline plan of a pull request against main: computed without secrets, posted without running its code", () => {
    const preview = load("preview.yml").doc;
    expect(Object.keys(preview.on)).toEqual(["pull_request"]);
    const plan = preview.jobs["offline-plan"];
    const script = plan.steps.map((s) => s.run ?? "").join("\n");
    expect(script).toMatch(/npx tsc --noEmit -p \./);
    expect(script).toMatch(/validate --strict --stack "\$stack"/);
    expect(script).toContain('git worktree add --detach ../base "$BASE_SHA"');
    expect(script).toMatch(
      /plan --stack "\$stack" --diff-from "offline-plan\/main-\$stack\.json" >> offline-plan\/comment\.md/,
    );
    expect(plan.steps.find((s) => s.uses?.startsWith("actions/upload-artifact@"))?.with).toEqual({
      name: "offline-plan",
      path: "offline-plan/",
    });

    const { doc: comment, text } = load("plan-comment.yml");
    expect(comment.on).toEqual({ workflow_run: { workflows: ["Preview"], types: ["completed"] } });
    expect(comment.permissions).toEqual({ contents: "read" });
    const job = comment.jobs.comment;
    expect(job.permissions).toEqual({ actions: "read", "pull-requests": "write" });
    // Holds a write token, so it runs none of the pull request's code: no checkout, no install, no project command.
    expect(text).not.toMatch(/actions\/checkout|npm |npx |node |hub-export\.js|secrets\./);
    expect(job.steps.filter((s) => s.uses).map((s) => s.uses!.split("@")[0])).toEqual(["actions/download-artifact"]);
    // The pull request is found from the run GitHub recorded, not from anything the artifact says.
    expect(job.steps.find((s) => s.run)!.env).toMatchObject({ HEAD_SHA: "${{ github.event.workflow_run.head_sha }}" });
  });

  it("run the qa preview on a pull request only after approval, and the prod preview only from main", () => {
    const qa = load("preview.yml").doc.jobs["preview-qa"];
    expect(qa.environment).toBe("qa");
    expect(qa.needs).toBe("offline-plan");
    expect(qa.steps.find((s) => s.with?.command === "preview")!.with).toMatchObject({
      "stack-name": "${{ vars.PULUMI_ORG }}/qa",
      "comment-on-pr": true,
    });
    expect(load("preview.yml").text).not.toMatch(/environment: prod|_PROD\b|--stack prod|\/prod\b/);

    const { doc } = load("preview-prod.yml");
    expect(Object.keys(doc.on).sort()).toEqual(["push", "workflow_dispatch"]);
    expect(doc.on.push).toEqual({ branches: ["main"] });
    const job = doc.jobs["preview-prod"];
    expect(job.environment).toBe("prod");
    expect(job.if).toBe("github.ref == 'refs/heads/main'");
    expect(job.steps.find((s) => s.with?.command === "preview")!.with).toMatchObject({
      "stack-name": "${{ vars.PULUMI_ORG }}/prod",
    });
  });

  it("take AWS credentials through OIDC only; the previews start transpile-only by the project's tsconfig", () => {
    for (const file of FILES) {
      const { text, doc } = load(file);
      expect(text).not.toMatch(/AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY/);
      for (const job of Object.values(doc.jobs).filter((j) => j.environment))
        expect(job.permissions?.["id-token"]).toBe("write");
    }
    // The Node language host transpiles only when the tsconfig says noCheck (its cmd/run/run.js), the setting
    // PULUMI_NODEJS_TRANSPILE_ONLY would override.
    const project = YAML.parse(fs.readFileSync(path.join(ROOT, "Pulumi.yaml"), "utf8"));
    const tsconfig = JSON.parse(fs.readFileSync(path.join(ROOT, project.runtime.options.tsconfig), "utf8"));
    expect(tsconfig.compilerOptions.noCheck).toBe(true);
  });

  it("pin every action by commit SHA with its version in a comment, one commit per action", () => {
    const shaOf = new Map<string, string>();
    let uses = 0;
    for (const file of FILES) {
      const { text } = load(file);
      for (const line of text.split("\n").filter((l) => /^\s*(-\s+)?uses:/.test(l))) {
        uses++;
        const m = /uses: ([\w.-]+\/[\w.-]+)@([0-9a-f]{40}) # v\d+\.\d+\.\d+$/.exec(line);
        expect(m, `${file}: ${line.trim()}`).not.toBeNull();
        const [, action, sha] = m!;
        expect(shaOf.get(action) ?? sha, `${file}: ${action} at two commits`).toBe(sha);
        shaOf.set(action, sha);
      }
    }
    expect(uses).toBeGreaterThanOrEqual(12);
  });

  it("run the whole suite once, on the image's Node.js (task/Dockerfile); npm start and the quick tier on the development version", () => {
    const { version } = imageNode();
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { engines: { node: string } };
    const development = /^>=(\d+\.\d+)/.exec(pkg.engines.node)![1];
    const { test, quick } = load("test.yml").doc.jobs;
    expect(test.strategy!.matrix.node).toEqual([version]);
    expect(test.steps.find((s) => s.uses?.startsWith("actions/setup-node@"))!.with!["node-version"]).toBe(
      "${{ matrix.node }}",
    );
    expect(test.steps.at(-1)!.run).toBe(".ci/run");
    expect(quick.steps.at(-1)!.run).toBe("npm ci --no-audit --no-fund && npm start && npm run test:quick");
    const script = fs.readFileSync(path.join(ROOT, "scripts", "fresh-clone-check.sh"), "utf8");
    expect(script).toMatch(/^npm start$/m);
    expect(script).toMatch(/^npm run test:quick$/m);
    // Everything else runs the development version.
    for (const file of FILES) {
      for (const step of Object.values(load(file).doc.jobs).flatMap((j) => j.steps)) {
        const v = step.with?.["node-version"];
        if (v !== undefined && v !== "${{ matrix.node }}") expect(v, file).toBe(development);
      }
    }
  });
});
