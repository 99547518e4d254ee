/**
 * Build once, promote by digest: qa builds and pushes the image (its AWS CLI held to the provider's account), prod
 * names qa's image by digest in its config and never builds; the promotion is the documented config command.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { BUILD_AND_PUSH_SCRIPT } from "../../components/task/taskImage";
import { validateStackConfig } from "../../config/validate";
import { editKey, repoStack } from "../fixtures/stacks";
import { inputs, one, ofType, planOf } from "../fixtures/plan";
import { applyConfigCommand } from "../support/pulumiConfig";
import { rawConfig } from "../support/rawConfig";

const execFileAsync = promisify(execFile);
const PROJECT = path.resolve(__dirname, "..", "..");
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-image-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The promotion command of docs/pulumi.md, "Promoting an image". */
function promotionCommand(): string {
  const line = fs
    .readFileSync(path.join(PROJECT, "docs", "pulumi.md"), "utf8")
    .split("\n")
    .find((l) => l.startsWith("pulumi config set --stack prod --path 'hubExport:image.promoted'"));
  expect(line).toBeDefined();
  return line!;
}

describe("build once, promote by digest", () => {
  it("promotes the image qa built with the documented command: prod runs that digest and builds nothing", async () => {
    const qa = await planOf(repoStack("qa").config, "qa");
    const qaImage = qa.outputs.image as string;
    expect(qaImage).toMatch(/^123456789012\.dkr\.ecr\.us-east-1\.amazonaws\.com\/hub-export-acme-qa@sha256:[0-9a-f]{64}$/);
    expect(ofType(qa, "command:local:Command")).toHaveLength(1);

    // `pulumi stack output image --stack qa`, substituted into the documented command, as the CLI stores it.
    const command = promotionCommand().replace(`"$(pulumi stack output image --stack qa)"`, qaImage);
    const prodConfig = repoStack("prod").config;
    const block = { "hubExport:image": JSON.parse(prodConfig["hubExport:image"]) };
    applyConfigCommand(block, command);
    const prod = await planOf({ ...prodConfig, "hubExport:image": JSON.stringify(block["hubExport:image"]) }, "prod");

    const [container] = JSON.parse(inputs(one(prod, "aws:ecs/taskDefinition:TaskDefinition")).containerDefinitions);
    expect(container.image).toBe(qaImage);
    expect(prod.outputs.image).toBe(qaImage);
    expect(ofType(prod, "command:local:Command")).toEqual([]);
    expect(ofType(prod, "aws:ecr/repository:Repository")).toEqual([]);
    const start = JSON.parse(inputs(ofType(prod, "aws:iam/rolePolicy:RolePolicy").find((p) => inputs(p).name === "export-task-start")!).policy);
    expect(start.Statement[0]).toMatchObject({ Sid: "PullTaskImage", Resource: ["arn:aws:ecr:us-east-1:123456789012:repository/hub-export-acme-qa"] });
  });

  it("refuses a PROD stack that would build, and an image named by tag", () => {
    const prod = rawConfig();
    prod.environment = "PROD";
    expect(() => validateStackConfig(prod, { source: "test" })).toThrow(/hubExport:image\.promoted: is required in a PROD stack: prod runs the image qa tested, by digest, and never builds/);
    prod.image = { promoted: "123456789012.dkr.ecr.us-east-1.amazonaws.com/hub-export-acme-qa:latest" };
    expect(() => validateStackConfig(prod, { source: "test" })).toThrow(/hubExport:image\.promoted: must be an image by digest/);
    prod.image = { promoted: `123456789012.dkr.ecr.us-east-1.amazonaws.com/hub-export-acme-qa@sha256:${"ab".repeat(32)}`, pullAccounts: ["210987654321"] };
    expect(() => validateStackConfig(prod, { source: "test" })).toThrow(/hubExport:image\.pullAccounts: is for the stack that builds the image/);
  });

  it("a build stack nobody pulls from keeps its newest images and goes with a destroy", async () => {
    const run = await planOf(editKey(repoStack("qa").config, "image", () => ({})), "qa");
    const repository = one(run, "aws:ecr/repository:Repository");
    expect(inputs(repository).forceDelete).toBe(true);
    expect(repository.options.retainOnDelete).toBeUndefined();
    expect(ofType(run, "aws:ecr/repositoryPolicy:RepositoryPolicy")).toEqual([]);
    expect(JSON.parse(inputs(one(run, "aws:ecr/lifecyclePolicy:LifecyclePolicy")).policy).rules[1]).toMatchObject({ selection: { tagStatus: "any", countType: "imageCountMoreThan", countNumber: 20 } });
  });
});

describe("the build script", () => {
  /** Stand-ins for aws, docker and npm that record their calls; the AWS CLI's account is `account`. */
  function tools(account: string): { bin: string; log: string } {
    const bin = fs.mkdtempSync(path.join(dir, "bin-"));
    const log = path.join(bin, "calls.log");
    const tool = (name: string, body: string) => fs.writeFileSync(path.join(bin, name), `#!/bin/bash\necho "${name} $*" >> "${log}"\n${body}\n`, { mode: 0o755 });
    tool(
      "aws",
      `case "$1 $2" in
  "sts get-caller-identity") echo "${account}" ;;
  "ecr get-login-password") echo "token" ;;
  "ecr describe-images") echo "sha256:${"c".repeat(64)}" ;;
esac`,
    );
    tool("docker", `[ "$1" = manifest ] && exit 1; [ "$1" = login ] && cat >/dev/null; true`);
    tool("npm", "");
    return { bin, log };
  }

  async function build(account: string) {
    const { bin, log } = tools(account);
    const env = { PATH: `${bin}:/usr/bin:/bin`, ACCOUNT_ID: "123456789012", AWS_REGION: "us-east-1", REGISTRY: "123456789012.dkr.ecr.us-east-1.amazonaws.com", REPOSITORY: "hub-export-acme-qa", TAG: "src-abc", DOCKERFILE: "task/Dockerfile" };
    const result = await execFileAsync("/bin/bash", ["-c", BUILD_AND_PUSH_SCRIPT], { cwd: dir, env }).then(
      (r) => ({ code: 0, ...r }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    );
    return { ...result, calls: fs.readFileSync(log, "utf8").trim().split("\n") };
  }

  it("builds and pushes with credentials of the stack's account, and prints the digest alone", async () => {
    const { code, stdout, calls } = await build("123456789012");
    expect(code).toBe(0);
    expect(stdout).toBe(`sha256:${"c".repeat(64)}\n`);
    const steps = calls.map((c) => c.split(" ").slice(0, 2).join(" "));
    // The account check first; the ECR password is piped into docker login (the two run at once).
    expect(steps[0]).toBe("aws sts");
    expect(steps.slice(1, 3).sort()).toEqual(["aws ecr", "docker login"]);
    expect(steps.slice(3)).toEqual(["docker manifest", "npm run", "docker build", "docker push", "aws ecr"]);
  });

  it("builds and pushes nothing with AWS CLI credentials of another account", async () => {
    const { code, stdout, stderr, calls } = await build("999999999999");
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toContain("the AWS CLI's credentials are of account 999999999999, but this stack deploys to 123456789012 (aws:allowedAccountIds)");
    expect(calls).toEqual(["aws sts get-caller-identity --query Account --output text"]);
  });
});
