/**
 * The export task's image: an ECR repository (scan on push, immutable tags, lifecycle policy) and the build and push
 * through @pulumi/command, triggered by the content hash of the task's sources, which is also the tag.
 *
 * The ECR token comes from aws.ecr.getAuthorizationToken and reaches the command only as a secret environment
 * variable. The token is new on every run, so the command runs on every `up`: it logs in, finds the tag already in
 * the registry and stops. It builds only for a tag that is not there.
 */
import * as aws from "@pulumi/aws";
import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";

export interface TaskImageArgs {
  repositoryName: string;
  /** Content hash of the task's sources (components/task/sourceHash.ts). */
  sourceHash: string;
  /** Dockerfile, relative to the project root (the build context). */
  dockerfile?: string;
  /** Images kept besides the one in use; older ones expire. */
  keepImages?: number;
}

/** Tag of an image built from `sourceHash`. */
export function imageTag(sourceHash: string): string {
  return `src-${sourceHash.slice(0, 24)}`;
}

/** Bash run by the command, from the project root. Every value comes from the environment; nothing secret is echoed. */
export const BUILD_AND_PUSH_SCRIPT = [
  "set -euo pipefail",
  'printf "%s" "$REGISTRY_PASSWORD" | docker login --username "$REGISTRY_USER" --password-stdin "$REGISTRY" >/dev/null',
  'if docker manifest inspect "$IMAGE" >/dev/null 2>&1; then echo "$IMAGE is already in the registry"; exit 0; fi',
  "npm run --silent build:task",
  'docker build --platform linux/amd64 --file "$DOCKERFILE" --tag "$IMAGE" .',
  'docker push "$IMAGE"',
].join("\n");

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
  /** `<repository url>:src-<hash>`; resolves after the push. */
  readonly imageUri: pulumi.Output<string>;

  constructor(name: string, args: TaskImageArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:task:TaskImage", name, {}, opts);
    const repository = new aws.ecr.Repository(
      name,
      { name: args.repositoryName, imageTagMutability: "IMMUTABLE", imageScanningConfiguration: { scanOnPush: true }, forceDelete: false },
      { parent: this },
    );
    new aws.ecr.LifecyclePolicy(name, { repository: repository.name, policy: lifecyclePolicy(args.keepImages ?? 20) }, { parent: this });

    const token = aws.ecr.getAuthorizationTokenOutput({ registryId: repository.registryId }, { parent: this });
    const image = pulumi.interpolate`${repository.repositoryUrl}:${imageTag(args.sourceHash)}`;
    const build = new command.local.Command(
      `${name}/build-and-push`,
      {
        create: BUILD_AND_PUSH_SCRIPT,
        interpreter: ["/bin/bash", "-c"],
        triggers: [args.sourceHash],
        environment: {
          IMAGE: image,
          DOCKERFILE: args.dockerfile ?? "task/Dockerfile",
          REGISTRY: token.proxyEndpoint,
          REGISTRY_USER: token.userName,
          REGISTRY_PASSWORD: pulumi.secret(token.password),
        },
      },
      { parent: this, dependsOn: [repository] },
    );

    this.repositoryArn = repository.arn;
    this.repositoryUrl = repository.repositoryUrl;
    // Carrying the command as a dependency makes consumers of the URI (the task definition) wait for the push.
    this.imageUri = pulumi.all([image, build.urn]).apply(([uri]) => uri);
    this.registerOutputs({ repositoryArn: this.repositoryArn, repositoryUrl: this.repositoryUrl, imageUri: this.imageUri });
  }
}
