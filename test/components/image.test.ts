/**
 * Build once, promote by digest: qa builds and pushes the image (with its own provider's ECR login), prod
 * names qa's image by digest in its config and never builds; the promotion is the documented config command.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { imageContextFolder } from "../../components/task/taskImage";
import { validateStackConfig } from "../../config/validate";
import { editKey, fixtureStack } from "../fixtures/stacks";
import { FIXED_SOURCE_HASH, inputs, isSecretInput, one, ofType, planOf } from "../fixtures/plan";
import { applyConfigCommand } from "../support/pulumiConfig";
import { formatPlanText } from "../../components/planner/format";
import { rawConfig } from "../support/rawConfig";
import { PROJECT_ROOT } from "../support/cli";

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
    expect(ofType(qa, "docker-build:index:Image")).toHaveLength(1);

    // `pulumi stack output image --stack qa`, substituted into the documented command, as the CLI stores it.
    const command = promotionCommand().replace(`"$(pulumi stack output image --stack qa)"`, qaImage);
    const prodConfig = fixtureStack("prod").config;
    const block = { "hubExport:image": JSON.parse(prodConfig["hubExport:image"]) };
    applyConfigCommand(block, command);
    const prod = await planOf({ ...prodConfig, "hubExport:image": JSON.stringify(block["hubExport:image"]) }, "prod");

    const [container] = JSON.parse(inputs(one(prod, "aws:ecs/taskDefinition:TaskDefinition")).containerDefinitions);
    expect(container.image).toBe(qaImage);
    expect(prod.outputs.image).toBe(qaImage);
    expect(ofType(prod, "docker-build:index:Image")).toEqual([]);
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

describe("the image build", () => {
  it("pushes with the ECR login of the stack's own provider, kept secret, and names no file of this checkout", async () => {
    const config = {
      ...fixtureStack("qa").config,
      "aws:accessKey": "AKIAEXAMPLEEXAMPLE00",
      "aws:secretKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    };
    const run = await planOf(config, "qa");
    const image = one(run, "docker-build:index:Image");
    const [registry] = inputs(image).registries as { address: string; username: string }[];
    expect(registry).toMatchObject({ address: "123456789012.dkr.ecr.us-east-1.amazonaws.com", username: "AWS" });
    expect(isSecretInput(image, "registries", "0", "password")).toBe(true);
    expect(JSON.stringify(image.inputs)).not.toContain("AKIAEXAMPLE");
    expect(inputs(image).context.location).toBe(imageContextFolder(FIXED_SOURCE_HASH));
    expect(path.isAbsolute(inputs(image).context.location)).toBe(false);
    // Deleting it would delete the pushed image, which prod may run by digest.
    expect(image.options.retainOnDelete).toBe(true);
  });
});
