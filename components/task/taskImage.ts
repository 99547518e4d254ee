/**
 * The export task's image, built once by the build stack (qa: ECR repository, a @pulumi/docker-build Image tagged by
 * the content hash, components/task/sourceHash.ts) and promoted by digest (`hubExport:image.promoted`: no repository,
 * no build). docs/pulumi-reference.md, "The image", says why each choice.
 */
import fs from "node:fs";
import path from "node:path";
import * as aws from "@pulumi/aws";
import * as dockerBuild from "@pulumi/docker-build";
import * as pulumi from "@pulumi/pulumi";
import { PROJECT_ROOT } from "../../config/load";
import { ECR_IMAGE_BY_DIGEST } from "../../config/schema";
import { imagePullPolicy } from "../policies";

export interface TaskImageArgs {
  repositoryName: string;
  /** Content hash of the image's sources (components/task/sourceHash.ts). */
  sourceHash: string;
  /** `pulumi destroy` deletes the repository with its images (qa); otherwise a repository with images stays. */
  forceDelete: boolean;
  /** An image by digest that another stack built (hubExport:image.promoted): no repository and no build here. */
  promoted?: string;
  /** Accounts whose stacks run images promoted from this repository (hubExport:image.pullAccounts). */
  pullAccounts: string[];
  partition: pulumi.Input<string>;
  /** Adopt the existing repository of this name (hubExport:image.adoptRepository) instead of creating it. */
  adoptRepository?: boolean;
  /** Write the build context before the provider hashes it (a real preview or up); the offline plan only names it. */
  writeContext?: boolean;
}

/**
 * Tag of an image built from `sourceHash`. Not the `src-` of the earlier bash build: ECR's tags are immutable, so the
 * first docker-build push of unchanged sources would meet the tag that build pushed.
 */
export function imageTag(sourceHash: string): string {
  return `img-${sourceHash.slice(0, 24)}`;
}

const CONTEXT_PREFIX = "image-context-";

/** The image's build context, relative to the project (no state names the checkout's folder): the bundle alone. */
export function imageContextFolder(sourceHash: string): string {
  return `node_modules/.cache/hub-export/${CONTEXT_PREFIX}${sourceHash.slice(0, 24)}`;
}

/** The two files task/Dockerfile copies, where it copies them from. */
const CONTEXT_FILES = ["dist/task/index.js", "dist/task/index.js.LEGAL.txt"];

/**
 * Writes the task bundle into the context folder once per content hash. The provider hashes the folder at every
 * preview, so its bytes must depend on the sources alone: esbuild's output does, and the modes are set.
 */
export async function writeImageContext(folder: string, root = PROJECT_ROOT): Promise<void> {
  const target = path.join(root, folder);
  if (CONTEXT_FILES.every((file) => fs.existsSync(path.join(target, file)))) return;
  const temporary = `${target}.${process.pid}`;
  const { buildTask } = require(path.join(root, "scripts", "build-task.js")) as {
    buildTask: (o: { outdir: string }) => Promise<unknown>;
  };
  fs.rmSync(temporary, { recursive: true, force: true });
  await buildTask({ outdir: path.join(temporary, "dist", "task") });
  fs.rmSync(path.join(temporary, "dist", "task", "index.js.map"));
  for (const file of CONTEXT_FILES) fs.chmodSync(path.join(temporary, file), 0o644);
  fs.rmSync(target, { recursive: true, force: true });
  fs.renameSync(temporary, target);
  // Other hashes' contexts a day old go (a checkout sharing this node_modules may still use a recent one).
  const cache = path.dirname(target);
  for (const name of fs.readdirSync(cache)) {
    const other = path.join(cache, name);
    if (name.startsWith(CONTEXT_PREFIX) && Date.now() - fs.statSync(other).mtimeMs > 86_400_000)
      fs.rmSync(other, { recursive: true, force: true });
  }
}

/**
 * Untagged layers expire after a day, tagged images beyond the 20 newest too, unless other accounts pull: a promoted
 * digest must stay pullable while a stack runs it (an image costs cents a month).
 */
function lifecyclePolicy(shared: boolean): string {
  const keepImages = 20;
  return JSON.stringify({
    rules: [
      {
        rulePriority: 1,
        description: "Expire untagged layers after a day",
        selection: { tagStatus: "untagged", countType: "sinceImagePushed", countUnit: "days", countNumber: 1 },
        action: { type: "expire" },
      },
      ...(shared
        ? []
        : [
            {
              rulePriority: 2,
              description: `Keep the ${keepImages} newest images`,
              selection: { tagStatus: "any", countType: "imageCountMoreThan", countNumber: keepImages },
              action: { type: "expire" },
            },
          ]),
    ],
  });
}

export class TaskImage extends pulumi.ComponentResource {
  readonly repositoryArn: pulumi.Output<string>;
  readonly repositoryUrl: pulumi.Output<string>;
  /** `<repository url>@sha256:...`: the pushed (or promoted) image by digest; resolves after the push. */
  readonly imageUri: pulumi.Output<string>;

  constructor(name: string, args: TaskImageArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:task:TaskImage", name, {}, opts);

    const image = args.promoted ? promotedImage(args.promoted, args.partition) : this.build(name, args);
    this.repositoryArn = image.repositoryArn;
    this.repositoryUrl = image.repositoryUrl;
    this.imageUri = image.imageUri;
    this.registerOutputs(image);
  }

  /** The repository, its policies and the build that pushes the image into it. */
  private build(name: string, args: TaskImageArgs) {
    const shared = args.pullAccounts.length > 0;
    // A stack re-created after a destroy that kept its repository adopts it: ECR refuses a second repository of the
    // name (RepositoryAlreadyExistsException). The engine imports it when the state has no such resource and leaves
    // the option alone once the state holds that id (the `import` resource option).
    if (args.adoptRepository)
      void pulumi.log.warn(
        `hubExport:image.adoptRepository: this up adopts ECR repository ${args.repositoryName}; remove the setting once it succeeded`,
        this,
      );
    const repository = new aws.ecr.Repository(
      name,
      {
        name: args.repositoryName,
        imageTagMutability: "IMMUTABLE",
        imageScanningConfiguration: { scanOnPush: true },
        forceDelete: args.forceDelete && !shared,
      },
      // Other accounts' stacks run images from it: a rename or destroy of this stack keeps it (docs/pulumi-reference.md).
      { parent: this, retainOnDelete: shared, ...(args.adoptRepository ? { import: args.repositoryName } : {}) },
    );
    new aws.ecr.LifecyclePolicy(
      name,
      { repository: repository.name, policy: lifecyclePolicy(shared) },
      { parent: this },
    );
    if (shared) {
      new aws.ecr.RepositoryPolicy(
        name,
        {
          repository: repository.name,
          policy: pulumi
            .output(args.partition)
            .apply((partition) => JSON.stringify(imagePullPolicy({ partition, accountIds: args.pullAccounts }))),
        },
        { parent: this, retainOnDelete: true },
      );
    }

    // The stack's own provider authenticates the push (the parent's aws provider runs the invoke): no other
    // credentials are involved, so the image goes only to the stack's account (aws:allowedAccountIds).
    const token = aws.ecr.getAuthorizationTokenOutput({ registryId: repository.registryId }, { parent: this });
    const folder = imageContextFolder(args.sourceHash);
    const image = new dockerBuild.Image(
      name,
      {
        context: {
          location: args.writeContext ? pulumi.output(writeImageContext(folder).then(() => folder)) : folder,
        },
        dockerfile: { location: "task/Dockerfile" },
        platforms: ["linux/amd64"],
        // The tag is the content hash: a config-only up or preview builds nothing and needs no Docker.
        tags: [pulumi.interpolate`${repository.repositoryUrl}:${imageTag(args.sourceHash)}`],
        push: true,
        buildOnPreview: false,
        registries: [
          {
            address: repository.repositoryUrl.apply((url) => url.split("/")[0]),
            username: token.userName,
            password: pulumi.secret(token.password),
          },
        ],
      },
      // Its delete would delete the pushed image, which a promoted stack may run: it goes with the repository, if ever.
      { parent: this, retainOnDelete: true },
    );

    return {
      repositoryArn: repository.arn,
      repositoryUrl: repository.repositoryUrl,
      imageUri: pulumi.interpolate`${repository.repositoryUrl}@${image.digest}`,
    };
  }
}

/** A promoted image (by digest, in the build stack's repository): no repository and no build here. */
function promotedImage(image: string, partition: pulumi.Input<string>) {
  const [, accountId, region, repositoryName] = ECR_IMAGE_BY_DIGEST.exec(image) ?? [];
  if (!repositoryName) throw new Error(`not an ECR image by digest: ${image}`);
  return {
    repositoryArn: pulumi.interpolate`arn:${partition}:ecr:${region}:${accountId}:repository/${repositoryName}`,
    repositoryUrl: pulumi.output(image.slice(0, image.indexOf("@"))),
    imageUri: pulumi.output(image),
  };
}
