/**
 * The export task's image: an ECR repository (scan on push, immutable tags, lifecycle policy) and the build and push
 * through @pulumi/command, triggered by the content hash of what the image is made of (components/task/sourceHash.ts),
 * which is also the tag.
 *
 * Nothing that changes from run to run is among the command's inputs: the script logs in to ECR itself with the
 * AWS CLI's short-lived password, so the command changes only with the content hash. An `up` that changes only
 * config runs no Docker; a new hash builds and pushes once. The script prints the pushed image's digest, and the
 * task definition pins the image by it (`<repository>@sha256:...`), not by tag.
 */
import * as aws from "@pulumi/aws";
import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";

export interface TaskImageArgs {
  repositoryName: string;
  /** Content hash of the image's sources (components/task/sourceHash.ts). */
  sourceHash: string;
  /** Dockerfile, relative to the project root (the build context). */
  dockerfile?: string;
  /** Images kept besides the one in use; older ones expire. */
  keepImages?: number;
  /** `pulumi destroy` deletes the repository with its images (qa); otherwise a repository with images stays. */
  forceDelete: boolean;
}

/** Tag of an image built from `sourceHash`. */
export function imageTag(sourceHash: string): string {
  return `src-${sourceHash.slice(0, 24)}`;
}

/**
 * Bash run by the command, from the project root; every value comes from the environment. Build output goes to
 * stderr; stdout is the image digest alone.
 */
export const BUILD_AND_PUSH_SCRIPT = [
  "set -euo pipefail",
  "{",
  '  aws ecr get-login-password --region "$AWS_REGION" | docker login --username AWS --password-stdin "$REGISTRY" >/dev/null',
  '  if docker manifest inspect "$REGISTRY/$REPOSITORY:$TAG" >/dev/null 2>&1; then',
  '    echo "$REGISTRY/$REPOSITORY:$TAG is already in the registry"',
  "  else",
  "    npm run --silent build:task",
  '    docker build --platform linux/amd64 --file "$DOCKERFILE" --tag "$REGISTRY/$REPOSITORY:$TAG" .',
  '    docker push "$REGISTRY/$REPOSITORY:$TAG"',
  "  fi",
  "} >&2",
  'aws ecr describe-images --region "$AWS_REGION" --repository-name "$REPOSITORY" --image-ids "imageTag=$TAG" --query "imageDetails[0].imageDigest" --output text',
].join("\n");

/** The digest the script printed (its last line), or a clear error. */
export function imageDigest(stdout: string, tag: string): string {
  const digest = stdout.trim().split("\n").pop()?.trim() ?? "";
  if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new Error(`the image build for tag ${tag} printed no digest (got ${JSON.stringify(digest.slice(0, 80))}); see the command's stderr in the engine log`);
  return digest;
}

export function lifecyclePolicy(keepImages: number): string {
  return JSON.stringify({
    rules: [
      { rulePriority: 1, description: "Expire untagged layers after a day", selection: { tagStatus: "untagged", countType: "sinceImagePushed", countUnit: "days", countNumber: 1 }, action: { type: "expire" } },
      { rulePriority: 2, description: `Keep the ${keepImages} newest images`, selection: { tagStatus: "any", countType: "imageCountMoreThan", countNumber: keepImages }, action: { type: "expire" } },
    ],
  });
}

export class TaskImage extends pulumi.ComponentResource {
  readonly repositoryArn: pulumi.Output<string>;
  readonly repositoryUrl: pulumi.Output<string>;
  /** `<repository url>@sha256:...`: the pushed image by digest; resolves after the push. */
  readonly imageUri: pulumi.Output<string>;

  constructor(name: string, args: TaskImageArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:task:TaskImage", name, {}, opts);
    const repository = new aws.ecr.Repository(
      name,
      { name: args.repositoryName, imageTagMutability: "IMMUTABLE", imageScanningConfiguration: { scanOnPush: true }, forceDelete: args.forceDelete },
      { parent: this },
    );
    new aws.ecr.LifecyclePolicy(name, { repository: repository.name, policy: lifecyclePolicy(args.keepImages ?? 20) }, { parent: this });

    const tag = imageTag(args.sourceHash);
    const build = new command.local.Command(
      `${name}/build-and-push`,
      {
        create: BUILD_AND_PUSH_SCRIPT,
        interpreter: ["/bin/bash", "-c"],
        triggers: [args.sourceHash],
        environment: {
          AWS_REGION: repository.repositoryUrl.apply((url) => url.split(".")[3]),
          REGISTRY: repository.repositoryUrl.apply((url) => url.split("/")[0]),
          REPOSITORY: repository.name,
          TAG: tag,
          DOCKERFILE: args.dockerfile ?? "task/Dockerfile",
        },
      },
      { parent: this, dependsOn: [repository] },
    );

    this.repositoryArn = repository.arn;
    this.repositoryUrl = repository.repositoryUrl;
    this.imageUri = pulumi.all([repository.repositoryUrl, build.stdout]).apply(([url, stdout]) => `${url}@${imageDigest(stdout, tag)}`);
    this.registerOutputs({ repositoryArn: this.repositoryArn, repositoryUrl: this.repositoryUrl, imageUri: this.imageUri });
  }
}
