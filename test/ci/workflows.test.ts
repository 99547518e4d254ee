/**
 * CI previews without leaking prod: a pull request gets the offline plans and the qa preview; the prod preview runs
 * only from main in the `prod` environment (required reviewers), which a pull request cannot start or use.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import YAML from "yaml";

const WORKFLOWS = path.join(__dirname, "..", "..", ".github", "workflows");
type Workflow = { on: Record<string, unknown>; permissions?: Record<string, string>; jobs: Record<string, { environment?: string; if?: string; steps: { run?: string; with?: Record<string, unknown>; env?: Record<string, string> }[]; permissions?: Record<string, string> }> };
const load = (file: string) => ({ text: fs.readFileSync(path.join(WORKFLOWS, file), "utf8"), doc: YAML.parse(fs.readFileSync(path.join(WORKFLOWS, file), "utf8")) as Workflow });

describe("CI workflows", () => {
  it("run on pull requests the type-check, the offline plans and the qa preview only", () => {
    const { text, doc } = load("preview.yml");
    expect(Object.keys(doc.on)).toEqual(["pull_request"]);
    expect(doc.permissions).toEqual({ contents: "read" });
    expect(Object.keys(doc.jobs)).toEqual(["check", "preview-qa"]);
    expect(doc.jobs.check.environment).toBeUndefined();
    expect(JSON.stringify(doc.jobs.check)).not.toContain("secrets.");
    expect(doc.jobs.check.steps.map((s) => s.run ?? "").join("\n")).toMatch(/npx tsc --noEmit -p \.[\s\S]*for stack in qa prod[\s\S]*plan --stack "\$stack"/);
    expect(doc.jobs["preview-qa"].environment).toBe("qa");
    // Nothing of prod in a workflow a pull request runs.
    expect(text).not.toMatch(/environment: prod|_PROD\b|--stack prod|\/prod\b/);
    const preview = doc.jobs["preview-qa"].steps.find((s) => s.with?.command === "preview")!;
    expect(preview.with).toMatchObject({ "stack-name": "${{ vars.PULUMI_ORG }}/qa", "comment-on-pr": true });
  });

  it("run the prod preview only from main, in the prod environment", () => {
    const { doc } = load("preview-prod.yml");
    expect(Object.keys(doc.on).sort()).toEqual(["push", "workflow_dispatch"]);
    expect(doc.on.push).toEqual({ branches: ["main"] });
    const job = doc.jobs["preview-prod"];
    expect(job.environment).toBe("prod");
    expect(job.if).toBe("github.ref == 'refs/heads/main'");
    expect(job.steps.find((s) => s.with?.command === "preview")!.with).toMatchObject({ "stack-name": "${{ vars.PULUMI_ORG }}/prod" });
  });

  it("take AWS credentials through OIDC only, and start the previews transpile-only", () => {
    for (const file of ["preview.yml", "preview-prod.yml"]) {
      const { text, doc } = load(file);
      expect(text).not.toMatch(/AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY/);
      for (const job of Object.values(doc.jobs).filter((j) => j.environment)) {
        expect(job.permissions?.["id-token"]).toBe("write");
        expect((job as { env?: Record<string, string> }).env?.PULUMI_NODEJS_TRANSPILE_ONLY).toBe("true");
      }
    }
  });
});
