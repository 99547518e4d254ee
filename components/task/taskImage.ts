/**
 * The export task's image, built once by the build stack (qa: ECR repository, @pulumi/command build triggered and
 * tagged by the content hash, components/task/sourceHash.ts) and promoted by digest (`hubExport:image.promoted`: no
 * repository, no build). docs/pulumi-reference.md, "The image", says why each choice.
 */
import * as aws from "@pulumi/aws";
import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import { ECR_IMAGE_BY_DIGEST } from "../../config/schema";
import { durationSeconds, type AwsAssumeRole } from "../../providers/awsAccess";
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
  /** The account the stack's AWS provider deploys to: the build refuses AWS CLI credentials of another. */
  accountId: pulumi.Input<string>;
  partition: pulumi.Input<string>;
  /** `aws:profile`, when the stack's provider uses one: the AWS CLI of the build uses the same. */
  awsProfile?: string;
  /** `aws:assumeRoles`, when the stack's provider assumes roles: the build assumes the same, in turn. */
  awsAssumeRoles?: AwsAssumeRole[];
  /** Adopt the existing repository of this name (hubExport:image.adoptRepository) instead of creating it. */
  adoptRepository?: boolean;
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
  // aws:assumeRoles, one role a line (assumeRoleLines): each assumed with the credentials the previous one gave.
  "  while IFS='|' read -r role_arn external_id session_name duration; do",
  '    [ -n "$role_arn" ] || continue',
  '    if ! creds="$(aws sts assume-role --role-arn "$role_arn" --role-session-name "${session_name:-hub-export-build}" ${external_id:+--external-id "$external_id"} ${duration:+--duration-seconds "$duration"} --query "Credentials.[AccessKeyId,SecretAccessKey,SessionToken]" --output text)"; then',
  '      echo "cannot assume $role_arn (aws:assumeRoles) with the AWS CLI\'s credentials; nothing was built or pushed"',
  "      exit 1",
  "    fi",
  '    read -r AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN <<<"$creds"',
  "    export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN",
  // A profile would win over the role's keys in the AWS CLI.
  "    unset AWS_PROFILE",
  '  done <<<"${ASSUME_ROLES:-}"',
  // The same credentials as the program's provider, and its account (which aws:allowedAccountIds pins), or nothing.
  '  caller="$(aws sts get-caller-identity --query Account --output text)"',
  '  if [ "$caller" != "$ACCOUNT_ID" ]; then',
  "    echo \"the AWS CLI's credentials are of account $caller, but this stack deploys to $ACCOUNT_ID (aws:allowedAccountIds): give the AWS CLI the credentials of the stack's provider (AWS_PROFILE or aws:profile); nothing was built or pushed\"",
  "    exit 1",
  "  fi",
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

/**
 * `aws:assumeRoles` for the script's ASSUME_ROLES: `roleArn|externalId|sessionName|durationSeconds` a line (AWS allows
 * no `|` in them; with tabs, `read` would merge empty fields). Session policies and tags are not passed.
 */
export function assumeRoleLines(roles: AwsAssumeRole[]): string {
  const field = (value: string | number | undefined) => String(value ?? "").replace(/[|\r\n]/g, "");
  return roles
    .map((r) => [r.roleArn, r.externalId, r.sessionName, durationSeconds(r.duration)].map(field).join("|"))
    .join("\n");
}

/** The digest the script printed (its last line), or a clear error. */
export function imageDigest(stdout: string, tag: string): string {
  const digest = stdout.trim().split("\n").pop()?.trim() ?? "";
  if (!/^sha256:[0-9a-f]{64}$/.test(digest))
    throw new Error(
      `the image build for tag ${tag} printed no digest (got ${JSON.stringify(digest.slice(0, 80))}); see the command's stderr in the engine log`,
    );
  return digest;
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

    const tag = imageTag(args.sourceHash);
    const build = new command.local.Command(
      `${name}/build-and-push`,
      {
        create: BUILD_AND_PUSH_SCRIPT,
        interpreter: ["/bin/bash", "-c"],
        triggers: [args.sourceHash],
        environment: {
          ACCOUNT_ID: args.accountId,
          AWS_REGION: repository.repositoryUrl.apply((url) => url.split(".")[3]),
          REGISTRY: repository.repositoryUrl.apply((url) => url.split("/")[0]),
          REPOSITORY: repository.name,
          TAG: tag,
          DOCKERFILE: "task/Dockerfile",
          ...(args.awsProfile ? { AWS_PROFILE: args.awsProfile } : {}),
          ...(args.awsAssumeRoles?.length ? { ASSUME_ROLES: assumeRoleLines(args.awsAssumeRoles) } : {}),
        },
      },
      { parent: this, dependsOn: [repository] },
    );

    return {
      repositoryArn: repository.arn,
      repositoryUrl: repository.repositoryUrl,
      imageUri: pulumi
        .all([repository.repositoryUrl, build.stdout])
        .apply(([url, stdout]) => `${url}@${imageDigest(stdout, tag)}`),
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
