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
import { assumeRoleLines, BUILD_AND_PUSH_SCRIPT } from "../../components/task/taskImage";
import { validateStackConfig } from "../../config/validate";
import { editKey, fixtureStack } from "../fixtures/stacks";
import { inputs, one, ofType, planOf } from "../fixtures/plan";
import { applyConfigCommand } from "../support/pulumiConfig";
import { formatPlanText } from "../../components/planner/format";
import { rawConfig } from "../support/rawConfig";
import { PROJECT_ROOT } from "../support/cli";

const execFileAsync = promisify(execFile);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-image-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The promotion command of docs/pulumi-reference.md, "Promoting an image". */
function promotionCommand(): string {
  const line = fs
    .readFileSync(path.join(PROJECT_ROOT, "docs", "pulumi-reference.md"), "utf8")
    .split("\n")
    .find((l) => l.startsWith("pulumi config set --stack prod --path 'hubExport:image.promoted'"));
  expect(line).toBeDefined();
  return line!;
}

describe("build once, promote by digest", () => {
  it("promotes the image qa built with the documented command: prod runs that digest and builds nothing", async () => {
    const qa = await planOf(fixtureStack("qa").config, "qa");
    const qaImage = qa.outputs.image as string;
    expect(qaImage).toMatch(
      /^123456789012\.dkr\.ecr\.us-east-1\.amazonaws\.com\/hub-export-acme-qa@sha256:[0-9a-f]{64}$/,
    );
    expect(ofType(qa, "command:local:Command")).toHaveLength(1);

    // `pulumi stack output image --stack qa`, substituted into the documented command, as the CLI stores it.
    const command = promotionCommand().replace(`"$(pulumi stack output image --stack qa)"`, qaImage);
    const prodConfig = fixtureStack("prod").config;
    const block = { "hubExport:image": JSON.parse(prodConfig["hubExport:image"]) };
    applyConfigCommand(block, command);
    const prod = await planOf({ ...prodConfig, "hubExport:image": JSON.stringify(block["hubExport:image"]) }, "prod");

    const [container] = JSON.parse(inputs(one(prod, "aws:ecs/taskDefinition:TaskDefinition")).containerDefinitions);
    expect(container.image).toBe(qaImage);
    expect(prod.outputs.image).toBe(qaImage);
    expect(ofType(prod, "command:local:Command")).toEqual([]);
    expect(ofType(prod, "aws:ecr/repository:Repository")).toEqual([]);
    const start = JSON.parse(
      inputs(ofType(prod, "aws:iam/rolePolicy:RolePolicy").find((p) => inputs(p).name === "export-task-start")!).policy,
    );
    expect(start.Statement[0]).toMatchObject({
      Sid: "PullTaskImage",
      Resource: ["arn:aws:ecr:us-east-1:123456789012:repository/hub-export-acme-qa"],
    });
  });

  it("refuses a PROD stack that would build, and an image named by tag", () => {
    const prod = rawConfig();
    prod.environment = "PROD";
    expect(() => validateStackConfig(prod, { source: "test" })).toThrow(
      /hubExport:image\.promoted: is required in a PROD stack: prod runs the image qa tested, by digest, and never builds/,
    );
    prod.image = { promoted: "123456789012.dkr.ecr.us-east-1.amazonaws.com/hub-export-acme-qa:latest" };
    expect(() => validateStackConfig(prod, { source: "test" })).toThrow(
      /hubExport:image\.promoted: must be an image by digest/,
    );
    prod.image = {
      promoted: `123456789012.dkr.ecr.us-east-1.amazonaws.com/hub-export-acme-qa@sha256:${"ab".repeat(32)}`,
      pullAccounts: ["210987654321"],
    };
    expect(() => validateStackConfig(prod, { source: "test" })).toThrow(
      /hubExport:image\.pullAccounts: is for the stack that builds the image/,
    );
  });

  it("qa re-created after a destroy adopts the repository the destroy kept, with the documented command, instead of creating it", async () => {
    // The destroy kept the repository (prod pulls from it): it holds what the first qa created.
    const first = await planOf(fixtureStack("qa").config, "qa");
    const kept = one(first, "aws:ecr/repository:Repository");
    expect(kept.options).toMatchObject({ retainOnDelete: true });
    expect(kept.options.import).toBeUndefined();

    // docs/pulumi-reference.md, "Re-creating qa after a destroy": the command as the CLI stores its value.
    const line = fs
      .readFileSync(path.join(PROJECT_ROOT, "docs", "pulumi-reference.md"), "utf8")
      .split("\n")
      .find((l) => l.startsWith("pulumi config set --stack qa --path 'hubExport:image.adoptRepository'"));
    expect(line).toBeDefined();
    const qaConfig = fixtureStack("qa").config;
    const block = { "hubExport:image": JSON.parse(qaConfig["hubExport:image"]) };
    applyConfigCommand(block, line!);
    const again = await planOf({ ...qaConfig, "hubExport:image": JSON.stringify(block["hubExport:image"]) }, "qa");
    const adopted = one(again, "aws:ecr/repository:Repository");
    // The engine imports the repository of that id (its name) and compares it with these inputs: the ones it was
    // created with, so the import succeeds and changes nothing.
    expect(adopted.options.import).toBe("hub-export-acme-qa");
    // `hub-export plan` shows it, as review reads it.
    expect(formatPlanText(again)).toMatch(
      /\+ aws:ecr\/repository:Repository {2}hub-export-image {2}\(imports existing id hub-export-acme-qa; retained on delete\)/,
    );
    expect(adopted.name).toBe(kept.name);
    expect(inputs(adopted)).toEqual(inputs(kept));
    // Its policy and lifecycle policy are written again (PutRepositoryPolicy, PutLifecyclePolicy set them whole).
    expect(ofType(again, "aws:ecr/repositoryPolicy:RepositoryPolicy")).toHaveLength(1);
    expect(ofType(again, "aws:ecr/lifecyclePolicy:LifecyclePolicy")).toHaveLength(1);
  });

  it("refuses adoptRepository in a stack that runs a promoted image", () => {
    const prod = rawConfig();
    prod.image = {
      promoted: `123456789012.dkr.ecr.us-east-1.amazonaws.com/hub-export-acme-qa@sha256:${"ab".repeat(32)}`,
      adoptRepository: true,
    };
    expect(() => validateStackConfig(prod, { source: "test" })).toThrow(
      /hubExport:image\.adoptRepository: is for the stack that builds the image/,
    );
  });

  it("a build stack nobody pulls from keeps its newest images and goes with a destroy", async () => {
    const run = await planOf(
      editKey(fixtureStack("qa").config, "image", () => ({})),
      "qa",
    );
    const repository = one(run, "aws:ecr/repository:Repository");
    expect(inputs(repository).forceDelete).toBe(true);
    expect(repository.options.retainOnDelete).toBeUndefined();
    expect(ofType(run, "aws:ecr/repositoryPolicy:RepositoryPolicy")).toEqual([]);
    expect(JSON.parse(inputs(one(run, "aws:ecr/lifecyclePolicy:LifecyclePolicy")).policy).rules[1]).toMatchObject({
      selection: { tagStatus: "any", countType: "imageCountMoreThan", countNumber: 20 },
    });
  });
});

describe("the build script", () => {
  /**
   * Stand-ins for aws, docker and npm that record their calls; the AWS CLI's account is `account`, or with a role's
   * keys (`assume-role` gives `KEY-<role name>`) the role's account: the digits in its ARN.
   */
  function tools(account: string): { bin: string; log: string } {
    const bin = fs.mkdtempSync(path.join(dir, "bin-"));
    const log = path.join(bin, "calls.log");
    const tool = (name: string, body: string) =>
      fs.writeFileSync(path.join(bin, name), `#!/bin/bash\necho "${name} $*" >> "${log}"\n${body}\n`, { mode: 0o755 });
    tool(
      "aws",
      `echo "$1 $2 key=\${AWS_ACCESS_KEY_ID:-none} token=\${AWS_SESSION_TOKEN:-none} profile=\${AWS_PROFILE:-none}" >> "${log}.credentials"
case "$1 $2" in
  "sts assume-role")
    arn="$4"; [[ "$arn" == *denied* ]] && { echo "AccessDenied" >&2; exit 254; }
    printf 'KEY-%s\tSECRET-%s\tTOKEN-%s\n' "\${arn##*/}" "\${arn##*/}" "\${arn##*/}" ;;
  "sts get-caller-identity")
    if [[ "\${AWS_ACCESS_KEY_ID:-}" == KEY-* ]]; then grep -o "[0-9]\\{12\\}" <<<"$(grep -F "role/\${AWS_ACCESS_KEY_ID#KEY-}" "${bin}/roles")"; else echo "${account}"; fi ;;
  "ecr get-login-password") echo "token" ;;
  "ecr describe-images") echo "sha256:${"c".repeat(64)}" ;;
esac`,
    );
    tool("docker", `[ "$1" = manifest ] && exit 1; [ "$1" = login ] && cat >/dev/null; true`);
    tool("npm", "");
    return { bin, log };
  }

  async function build(account: string, more: Record<string, string> = {}) {
    const { bin, log } = tools(account);
    fs.writeFileSync(path.join(bin, "roles"), (more.ASSUME_ROLES ?? "").split("|").join("\n"));
    const env = {
      PATH: `${bin}:/usr/bin:/bin`,
      ACCOUNT_ID: "123456789012",
      AWS_REGION: "us-east-1",
      REGISTRY: "123456789012.dkr.ecr.us-east-1.amazonaws.com",
      REPOSITORY: "hub-export-acme-qa",
      TAG: "src-abc",
      DOCKERFILE: "task/Dockerfile",
      ...more,
    };
    const result = await execFileAsync("/bin/bash", ["-c", BUILD_AND_PUSH_SCRIPT], { cwd: dir, env }).then(
      (r) => ({ code: 0, ...r }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    );
    const credentials = fs.existsSync(`${log}.credentials`)
      ? fs.readFileSync(`${log}.credentials`, "utf8").trim().split("\n")
      : [];
    return { ...result, calls: fs.readFileSync(log, "utf8").trim().split("\n"), credentials };
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
    expect(stderr).toContain(
      "the AWS CLI's credentials are of account 999999999999, but this stack deploys to 123456789012 (aws:allowedAccountIds)",
    );
    expect(calls).toEqual(["aws sts get-caller-identity --query Account --output text"]);
  });

  it("assumes the stack's aws:assumeRoles in turn, each with the keys of the one before, drops the profile, then checks the account", async () => {
    const roles = assumeRoleLines([
      { roleArn: "arn:aws:iam::111111111111:role/hop", sessionName: "ci", duration: "1h" },
      { roleArn: "arn:aws:iam::123456789012:role/deployer", externalId: "ext-7" },
    ]);
    const { code, stdout, calls, credentials } = await build("999999999999", {
      ASSUME_ROLES: roles,
      AWS_PROFILE: "platform",
    });
    expect(code).toBe(0);
    expect(stdout).toBe(`sha256:${"c".repeat(64)}\n`);
    expect(calls.slice(0, 2)).toEqual([
      "aws sts assume-role --role-arn arn:aws:iam::111111111111:role/hop --role-session-name ci --duration-seconds 3600 --query Credentials.[AccessKeyId,SecretAccessKey,SessionToken] --output text",
      "aws sts assume-role --role-arn arn:aws:iam::123456789012:role/deployer --role-session-name hub-export-build --external-id ext-7 --query Credentials.[AccessKeyId,SecretAccessKey,SessionToken] --output text",
    ]);
    expect(credentials.slice(0, 3)).toEqual([
      "sts assume-role key=none token=none profile=platform",
      "sts assume-role key=KEY-hop token=TOKEN-hop profile=none",
      "sts get-caller-identity key=KEY-deployer token=TOKEN-deployer profile=none",
    ]);
    // Every later call uses the last role's keys.
    expect(new Set(credentials.slice(2).map((c) => c.split(" ").slice(2).join(" ")))).toEqual(
      new Set(["key=KEY-deployer token=TOKEN-deployer profile=none"]),
    );
  });

  it("builds nothing when a role cannot be assumed, or the last role is of another account", async () => {
    const denied = await build("123456789012", {
      ASSUME_ROLES: assumeRoleLines([{ roleArn: "arn:aws:iam::123456789012:role/denied" }]),
    });
    expect(denied.code).toBe(1);
    expect(denied.stdout).toBe("");
    expect(denied.stderr).toContain(
      "cannot assume arn:aws:iam::123456789012:role/denied (aws:assumeRoles) with the AWS CLI's credentials; nothing was built or pushed",
    );
    expect(denied.calls).toHaveLength(1);
    const elsewhere = await build("123456789012", {
      ASSUME_ROLES: assumeRoleLines([{ roleArn: "arn:aws:iam::555555555555:role/other" }]),
    });
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toContain(
      "the AWS CLI's credentials are of account 555555555555, but this stack deploys to 123456789012",
    );
    expect(elsewhere.calls.map((c) => c.split(" ").slice(0, 3).join(" "))).toEqual([
      "aws sts assume-role",
      "aws sts get-caller-identity",
    ]);
  });

  it("the program hands the build the stack's profile and roles, never its keys", async () => {
    const config = {
      ...fixtureStack("qa").config,
      "aws:profile": "platform",
      "aws:assumeRoles": JSON.stringify([
        { roleArn: "arn:aws:iam::123456789012:role/deployer", externalId: "ext-7", duration: "15m" },
      ]),
      "aws:accessKey": "AKIAEXAMPLEEXAMPLE00",
      "aws:secretKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    };
    const env = inputs(one(await planOf(config, "qa"), "command:local:Command")).environment as Record<string, string>;
    expect(env.AWS_PROFILE).toBe("platform");
    expect(env.ASSUME_ROLES).toBe("arn:aws:iam::123456789012:role/deployer|ext-7||900");
    expect(JSON.stringify(env)).not.toContain("wJalrXUtnFEMI");
    expect(JSON.stringify(env)).not.toContain("AKIAEXAMPLE");
  });
});
