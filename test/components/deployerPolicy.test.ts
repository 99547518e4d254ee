/**
 * docs/deployer-policy.json, the IAM policy of whoever runs `pulumi up`, is exactly what the program needs: every
 * resource type and data source (invoke) the program registers for the fixture stacks (qa builds its image and creates
 * its bucket, prod adopts its bucket, a stack with a vendor scripts release) maps to the AWS actions its create, read,
 * update and delete call (the AWS provider's, or our dynamic providers' SDK calls), and the policy holds those actions,
 * no fewer and no more. A new resource type without a mapping fails here, so the policy cannot fall behind the program.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import yazl from "yazl";
import { runProgramUnderMocks } from "../../components/planner";
import { hubExportProgram } from "../../components/program";
import { PROJECT_ROOT } from "../../config/load";
import { FIXED_SOURCE_HASH } from "../fixtures/plan";
import { fixtureStack, type EngineConfigMap } from "../fixtures/stacks";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-deployer-policy-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const S3_BUCKET_READ = [
  "s3:ListBucket",
  "s3:GetBucketLocation",
  "s3:GetBucketPolicy",
  "s3:GetBucketAcl",
  "s3:GetBucketCORS",
  "s3:GetBucketWebsite",
  "s3:GetBucketVersioning",
  "s3:GetAccelerateConfiguration",
  "s3:GetBucketRequestPayment",
  "s3:GetBucketLogging",
  "s3:GetLifecycleConfiguration",
  "s3:GetReplicationConfiguration",
  "s3:GetEncryptionConfiguration",
  "s3:GetBucketObjectLockConfiguration",
  "s3:GetBucketTagging",
];
/** SSE-KMS with the stack's key: a write asks KMS for a data key, a read (or a copy) decrypts it. */
const KMS_OBJECTS = ["kms:GenerateDataKey", "kms:Decrypt"];
/** The dynamic providers' account check before their first call (providers/awsAccess.ts), and aws:assumeRoles. */
const ACCOUNT_CHECK = ["sts:GetCallerIdentity", "sts:AssumeRole"];

/**
 * What each resource type's create, read, update and delete call, or a data source's invoke. The AWS provider's
 * calls are the Terraform AWS provider's (which it bridges); a tag needs its Tag action at create too (KMS and
 * Secrets Manager say so; CreateLogGroup with tags likewise). Types that touch no AWS API map to [].
 */
const ACTIONS: Record<string, string[]> = {
  // Providers: the AWS provider checks the account it deploys to (aws:allowedAccountIds) and may assume roles.
  "pulumi:providers:aws": ["sts:GetCallerIdentity", "sts:AssumeRole"],
  "pulumi:providers:postgresql": [],
  "aws:index/getCallerIdentity:getCallerIdentity": ["sts:GetCallerIdentity"],
  "aws:index/getPartition:getPartition": [],
  "aws:index/getRegion:getRegion": [],
  // The adopted bucket's ownership guard (components/storage/objectGuard.ts): HeadObject, GetObjectTagging.
  "hubExport:offline:getObjectTags": ["s3:ListBucket", "s3:GetObject", "s3:GetObjectTagging", ...ACCOUNT_CHECK],
  "aws:kms/key:Key": [
    "kms:CreateKey",
    "kms:TagResource",
    "kms:DescribeKey",
    "kms:GetKeyPolicy",
    "kms:PutKeyPolicy",
    "kms:GetKeyRotationStatus",
    "kms:EnableKeyRotation",
    "kms:UpdateKeyDescription",
    "kms:ListResourceTags",
    "kms:UntagResource",
    "kms:ScheduleKeyDeletion",
  ],
  "aws:kms/alias:Alias": ["kms:CreateAlias", "kms:UpdateAlias", "kms:DeleteAlias", "kms:ListAliases"],
  // A created bucket (qa): its own settings, and forceDestroy empties it version by version.
  "aws:s3/bucket:Bucket": [
    "s3:CreateBucket",
    "s3:DeleteBucket",
    "s3:PutBucketTagging",
    "s3:ListBucketVersions",
    "s3:DeleteObjectVersion",
    ...S3_BUCKET_READ,
  ],
  // An adopted bucket (prod), read by name and never changed.
  "read aws:s3/bucket:Bucket": S3_BUCKET_READ,
  "aws:s3/bucketPolicy:BucketPolicy": ["s3:PutBucketPolicy", "s3:GetBucketPolicy", "s3:DeleteBucketPolicy"],
  "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": [
    "s3:PutBucketPublicAccessBlock",
    "s3:GetBucketPublicAccessBlock",
    "s3:DeleteBucketPublicAccessBlock",
  ],
  "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": [
    "s3:PutEncryptionConfiguration",
    "s3:GetEncryptionConfiguration",
  ],
  "aws:s3/bucketVersioning:BucketVersioning": ["s3:PutBucketVersioning", "s3:GetBucketVersioning"],
  // The access-log bucket (qa): owner-enforced, logs expiring, the stack's bucket logging into it. Their deletes
  // (DeleteBucketOwnershipControls, DeleteBucketLifecycle, PutBucketLogging without a target) need the Put actions.
  "aws:s3/bucketOwnershipControls:BucketOwnershipControls": [
    "s3:PutBucketOwnershipControls",
    "s3:GetBucketOwnershipControls",
  ],
  "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": [
    "s3:PutLifecycleConfiguration",
    "s3:GetLifecycleConfiguration",
  ],
  "aws:s3/bucketLogging:BucketLogging": ["s3:PutBucketLogging", "s3:GetBucketLogging"],
  // In a versioned bucket the provider deletes an object by deleting each of its versions.
  "aws:s3/bucketObjectv2:BucketObjectv2": [
    "s3:PutObject",
    "s3:PutObjectTagging",
    "s3:GetObject",
    "s3:GetObjectTagging",
    "s3:DeleteObject",
    "s3:ListBucketVersions",
    "s3:DeleteObjectVersion",
    ...KMS_OBJECTS,
  ],
  // Our dynamic providers, with the stack's AWS credentials (providers/sharedObjects.ts, scriptFiles.ts,
  // scriptsRelease.ts).
  "pulumi-nodejs:dynamic/hubExport:SharedObject": ["s3:PutObject", "s3:GetObject", ...KMS_OBJECTS, ...ACCOUNT_CHECK],
  "pulumi-nodejs:dynamic/hubExport:ScriptFileEntries": [
    "s3:GetObject",
    "s3:PutObject",
    ...KMS_OBJECTS,
    ...ACCOUNT_CHECK,
  ],
  "pulumi-nodejs:dynamic/hubExport:ScriptsReleaseFiles": [
    "s3:ListBucket",
    "s3:PutObject",
    "s3:DeleteObject",
    "kms:GenerateDataKey",
    ...ACCOUNT_CHECK,
  ],
  // SQL and the hub's cfg API: no AWS call.
  "pulumi-nodejs:dynamic/hubExport:ConfigRow": [],
  "pulumi-nodejs:dynamic/hubExport:SqlBaseline": [],
  "pulumi-nodejs:dynamic/hubExport:ClientRunTables": [],
  "pulumi-nodejs:dynamic/hubExport:RoutingRuleSet": [],
  "postgresql:index/role:Role": [],
  "postgresql:index/grant:Grant": [],
  "postgresql:index/defaultPrivileges:DefaultPrivileges": [],
  // A customer managed key: Secrets Manager asks it for a data key on a write, and decrypts it on a read.
  "aws:secretsmanager/secret:Secret": [
    "secretsmanager:CreateSecret",
    "secretsmanager:TagResource",
    "secretsmanager:DescribeSecret",
    "secretsmanager:GetResourcePolicy",
    "secretsmanager:UpdateSecret",
    "secretsmanager:UntagResource",
    "secretsmanager:DeleteSecret",
  ],
  "aws:secretsmanager/secretVersion:SecretVersion": [
    "secretsmanager:PutSecretValue",
    "secretsmanager:GetSecretValue",
    "secretsmanager:UpdateSecretVersionStage",
    ...KMS_OBJECTS,
  ],
  "aws:iam/role:Role": [
    "iam:CreateRole",
    "iam:TagRole",
    "iam:GetRole",
    "iam:ListRolePolicies",
    "iam:GetRolePolicy",
    "iam:ListAttachedRolePolicies",
    "iam:UpdateRole",
    "iam:UpdateAssumeRolePolicy",
    "iam:UntagRole",
    "iam:ListInstanceProfilesForRole",
    "iam:DeleteRole",
  ],
  "aws:iam/rolePolicy:RolePolicy": ["iam:PutRolePolicy", "iam:GetRolePolicy", "iam:DeleteRolePolicy"],
  "aws:ecr/repository:Repository": [
    "ecr:CreateRepository",
    "ecr:TagResource",
    "ecr:DescribeRepositories",
    "ecr:ListTagsForResource",
    "ecr:PutImageScanningConfiguration",
    "ecr:PutImageTagMutability",
    "ecr:UntagResource",
    "ecr:DeleteRepository",
    "ecr:BatchDeleteImage",
  ],
  "aws:ecr/lifecyclePolicy:LifecyclePolicy": [
    "ecr:PutLifecyclePolicy",
    "ecr:GetLifecyclePolicy",
    "ecr:DeleteLifecyclePolicy",
  ],
  "aws:ecr/repositoryPolicy:RepositoryPolicy": [
    "ecr:SetRepositoryPolicy",
    "ecr:GetRepositoryPolicy",
    "ecr:DeleteRepositoryPolicy",
  ],
  // The image build (components/task/taskImage.ts): the AWS CLI's account check, an ECR login, the push, the digest.
  "command:local:Command": [
    "sts:GetCallerIdentity",
    "sts:AssumeRole",
    "ecr:GetAuthorizationToken",
    "ecr:BatchCheckLayerAvailability",
    "ecr:InitiateLayerUpload",
    "ecr:UploadLayerPart",
    "ecr:CompleteLayerUpload",
    "ecr:PutImage",
    "ecr:BatchGetImage",
    "ecr:DescribeImages",
  ],
  // The first cluster of an account creates ECS's service-linked role.
  "aws:ecs/cluster:Cluster": [
    "ecs:CreateCluster",
    "ecs:TagResource",
    "ecs:DescribeClusters",
    "ecs:UpdateCluster",
    "ecs:UntagResource",
    "ecs:ListTagsForResource",
    "ecs:DeleteCluster",
    "iam:CreateServiceLinkedRole",
  ],
  // Registering a task definition passes its task and execution roles.
  "aws:ecs/taskDefinition:TaskDefinition": [
    "ecs:RegisterTaskDefinition",
    "ecs:TagResource",
    "ecs:DescribeTaskDefinition",
    "ecs:ListTagsForResource",
    "ecs:DeregisterTaskDefinition",
    "iam:PassRole",
  ],
  "aws:cloudwatch/logGroup:LogGroup": [
    "logs:CreateLogGroup",
    "logs:TagResource",
    "logs:PutRetentionPolicy",
    "logs:DescribeLogGroups",
    "logs:ListTagsForResource",
    "logs:AssociateKmsKey",
    "logs:DisassociateKmsKey",
    "logs:UntagResource",
    "logs:DeleteLogGroup",
  ],
  "aws:cloudwatch/metricAlarm:MetricAlarm": [
    "cloudwatch:PutMetricAlarm",
    "cloudwatch:TagResource",
    "cloudwatch:DescribeAlarms",
    "cloudwatch:ListTagsForResource",
    "cloudwatch:UntagResource",
    "cloudwatch:DeleteAlarms",
  ],
  "aws:cloudwatch/compositeAlarm:CompositeAlarm": [
    "cloudwatch:PutCompositeAlarm",
    "cloudwatch:TagResource",
    "cloudwatch:DescribeAlarms",
    "cloudwatch:ListTagsForResource",
    "cloudwatch:UntagResource",
    "cloudwatch:DeleteAlarms",
  ],
  "aws:cloudwatch/dashboard:Dashboard": [
    "cloudwatch:PutDashboard",
    "cloudwatch:GetDashboard",
    "cloudwatch:DeleteDashboards",
  ],
  "aws:cloudwatch/eventRule:EventRule": [
    "events:PutRule",
    "events:TagResource",
    "events:DescribeRule",
    "events:ListTagsForResource",
    "events:UntagResource",
    "events:DeleteRule",
  ],
  "aws:cloudwatch/eventTarget:EventTarget": ["events:PutTargets", "events:ListTargetsByRule", "events:RemoveTargets"],
  // Creating a schedule passes its role.
  "aws:scheduler/schedule:Schedule": [
    "scheduler:CreateSchedule",
    "scheduler:GetSchedule",
    "scheduler:UpdateSchedule",
    "scheduler:DeleteSchedule",
    "iam:PassRole",
  ],
  "aws:sns/topic:Topic": [
    "sns:CreateTopic",
    "sns:TagResource",
    "sns:GetTopicAttributes",
    "sns:SetTopicAttributes",
    "sns:ListTagsForResource",
    "sns:UntagResource",
    "sns:DeleteTopic",
  ],
  "aws:sns/topicPolicy:TopicPolicy": ["sns:SetTopicAttributes", "sns:GetTopicAttributes"],
  "aws:sns/topicSubscription:TopicSubscription": [
    "sns:Subscribe",
    "sns:GetSubscriptionAttributes",
    "sns:SetSubscriptionAttributes",
    "sns:Unsubscribe",
  ],
  "aws:sqs/queue:Queue": [
    "sqs:CreateQueue",
    "sqs:TagQueue",
    "sqs:GetQueueAttributes",
    "sqs:SetQueueAttributes",
    "sqs:ListQueueTags",
    "sqs:UntagQueue",
    "sqs:DeleteQueue",
  ],
};

async function zip(file: string): Promise<string> {
  const z = new yazl.ZipFile();
  z.addBuffer(Buffer.from("print('hub')\n"), "export_hub.py");
  z.end();
  await new Promise<void>((resolve, reject) =>
    z.outputStream
      .pipe(fs.createWriteStream(file))
      .on("close", () => resolve())
      .on("error", reject),
  );
  return file;
}

/** The resource types (`read <type>` for a read) and invoke tokens of a stack's program. */
async function tokensOf(stack: "qa" | "prod", config: EngineConfigMap): Promise<string[]> {
  const invokes: { token: string; inputs: Record<string, unknown> }[] = [];
  const program = () => hubExportProgram({ offline: true, taskSourceHash: FIXED_SOURCE_HASH });
  const run = await runProgramUnderMocks({ stack, config, account: { invokes }, program });
  const types = run.resources.filter((r) => r.custom).map((r) => `${r.read ? "read " : ""}${r.type}`);
  return [...types, ...invokes.map((i) => i.token)];
}

describe("the deployer's IAM policy (docs/deployer-policy.json)", () => {
  it("holds exactly the actions of every resource type and data source the program uses", async () => {
    const release = path.relative(PROJECT_ROOT, await zip(path.join(dir, "hub_python_scripts.zip")));
    const withRelease = { ...fixtureStack("qa").config, "hubExport:scriptsRelease": JSON.stringify({ zip: release }) };
    const tokens = new Set([
      ...(await tokensOf("qa", fixtureStack("qa").config)),
      ...(await tokensOf("prod", fixtureStack("prod").config)),
      ...(await tokensOf("qa", withRelease)),
    ]);
    const unmapped = [...tokens].filter((t) => !(t in ACTIONS));
    expect(unmapped, "resource types or invokes with no mapping to IAM actions: add them to ACTIONS").toEqual([]);
    expect(
      Object.keys(ACTIONS).filter((t) => !tokens.has(t)),
      "mapped types the program no longer uses",
    ).toEqual([]);

    type Statement = { Sid: string; Effect: string; Action: string[]; Resource: string };
    const text = fs.readFileSync(path.join(PROJECT_ROOT, "docs", "deployer-policy.json"), "utf8");
    const policy = JSON.parse(text) as { Version: string; Statement: Statement[] };
    expect(policy.Version).toBe("2012-10-17");
    const granted = policy.Statement.flatMap((s) => s.Action);
    const needed = new Set([...tokens].flatMap((t) => ACTIONS[t]));
    const lacking = [...needed].filter((a) => !granted.includes(a)).sort();
    expect(lacking, "actions the program needs that the policy lacks").toEqual([]);
    expect(granted.filter((a) => !needed.has(a)).sort(), "actions of the policy no resource needs").toEqual([]);
    expect(new Set(granted).size, "an action listed twice").toBe(granted.length);
    for (const s of policy.Statement) {
      expect(s.Effect).toBe("Allow");
      expect(s.Action, `${s.Sid}: sorted`).toEqual([...s.Action].sort());
    }
  }, 120_000);

  it("is linked from docs/pulumi.md's first section", () => {
    const page = fs.readFileSync(path.join(PROJECT_ROOT, "docs", "pulumi.md"), "utf8");
    const start = page.indexOf("## What you need, and from whom");
    const first = page.slice(start, page.indexOf("\n## ", start + 3));
    expect(first).toContain("](deployer-policy.json)");
  });
});
