/**
 * IAM policy documents, as pure functions of resolved ARNs: each grants exactly what one principal needs, and the
 * tests compare them whole. Lists of ARNs are sorted so that documents are stable.
 */
import { enableIamPoliciesStatement, logsKeyStatement } from "../core/keyPolicy";

export interface PolicyStatement {
  Sid: string;
  Effect: "Allow" | "Deny";
  Action: string[] | string;
  /** Absent in trust policies, where IAM forbids it. */
  Resource?: string[] | string;
  Principal?: Record<string, string | string[]> | "*";
  Condition?: Record<string, Record<string, string | string[]>>;
}

export interface PolicyDocument {
  Version: "2012-10-17";
  Statement: PolicyStatement[];
}

export const document = (...statements: PolicyStatement[]): PolicyDocument => ({
  Version: "2012-10-17",
  Statement: statements,
});
/** An Allow statement; the keys keep the order IAM shows them in (Sid, Effect, Principal, Action, Resource, Condition). */
export const allow = (Sid: string, rest: Omit<PolicyStatement, "Sid" | "Effect">): PolicyStatement => ({
  Sid,
  Effect: "Allow",
  ...rest,
});
export const sorted = (values: readonly string[]) => [...new Set(values)].sort();

export interface AccountScope {
  accountId: string;
  partition: string;
  region: string;
}

/**
 * The task role: ECS tasks of this account and region may assume it. The conditions are the confused-deputy guard AWS
 * recommends for task roles (Amazon ECS developer guide, "Amazon ECS task IAM role": use aws:SourceAccount or
 * aws:SourceArn in the role's trust relationship).
 */
export function ecsTasksTrustPolicy(scope: AccountScope): PolicyDocument {
  return document(
    allow("EcsTasksOfThisAccount", {
      Principal: { Service: "ecs-tasks.amazonaws.com" },
      Action: "sts:AssumeRole",
      Condition: {
        StringEquals: { "aws:SourceAccount": scope.accountId },
        ArnLike: { "aws:SourceArn": `arn:${scope.partition}:ecs:${scope.region}:${scope.accountId}:*` },
      },
    }),
  );
}

/**
 * The execution role (the agents pull the image, write the logs): trusted exactly as the Amazon ECS developer guide
 * documents it, without the aws:SourceAccount/SourceArn conditions, which it documents for task roles only. It is
 * guarded by iam:PassRole instead: the schedule's role may pass exactly this stack's two roles.
 */
export function ecsTaskExecutionTrustPolicy(): PolicyDocument {
  return document(
    allow("EcsTaskExecution", {
      Principal: { Service: "ecs-tasks.amazonaws.com" },
      Action: "sts:AssumeRole",
    }),
  );
}

/** EventBridge Scheduler of this account may assume the schedule's role. */
export function schedulerTrustPolicy(scope: Pick<AccountScope, "accountId">): PolicyDocument {
  return document(
    allow("SchedulerOfThisAccount", {
      Principal: { Service: "scheduler.amazonaws.com" },
      Action: "sts:AssumeRole",
      Condition: { StringEquals: { "aws:SourceAccount": scope.accountId } },
    }),
  );
}

/**
 * The export task at run time: reads the rendered template and the scripts folder, reads its connection records by
 * name from Secrets Manager (exactly its own), decrypts them and the SSE-KMS credential files with its key. Nothing
 * else.
 */
export function taskRolePolicy(input: {
  bucketArn: string;
  /** Keys or key prefixes ending in /: the job's rendered pipeline and the scripts folder. */
  readPrefixes: readonly string[];
  connectionSecretArns: readonly string[];
  kmsKeyArn: string;
  region: string;
}): PolicyDocument {
  const prefixes = sorted(input.readPrefixes);
  return document(
    allow("ReadDefinitionAndScripts", {
      Action: ["s3:GetObject"],
      Resource: prefixes.map((p) => `${input.bucketArn}/${p}*`),
    }),
    // Listing lets a missing file answer 404 rather than 403; only under the same two prefixes.
    allow("ListDefinitionAndScriptsFolders", {
      Action: ["s3:ListBucket"],
      Resource: [input.bucketArn],
      Condition: { StringLike: { "s3:prefix": prefixes.map((p) => `${p}*`) } },
    }),
    allow("ReadConnectionRecords", {
      Action: ["secretsmanager:GetSecretValue"],
      Resource: sorted(input.connectionSecretArns),
    }),
    allow("DecryptThroughS3AndSecretsManager", {
      Action: ["kms:Decrypt"],
      Resource: [input.kmsKeyArn],
      Condition: {
        StringEquals: {
          "kms:ViaService": [`s3.${input.region}.amazonaws.com`, `secretsmanager.${input.region}.amazonaws.com`],
        },
      },
    }),
  );
}

/**
 * The ECS agent starting the task: pulls the image, writes the logs. Nothing else: the container has no `secrets`,
 * the task reads its connection records itself with the task role.
 */
export function executionRolePolicy(input: { repositoryArn: string; logGroupArn: string }): PolicyDocument {
  return document(
    allow("PullTaskImage", {
      Action: ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
      Resource: [input.repositoryArn],
    }),
    // GetAuthorizationToken has no resource-level permissions.
    allow("AuthenticateToRegistry", { Action: ["ecr:GetAuthorizationToken"], Resource: ["*"] }),
    allow("WriteTaskLogs", {
      Action: ["logs:CreateLogStream", "logs:PutLogEvents"],
      Resource: [`${input.logGroupArn}:log-stream:*`],
    }),
  );
}

/**
 * The build stack's image repository: the accounts of the stacks that run its images promoted by digest (prod) may
 * pull them, nothing else. Their execution roles still need the same actions in their own IAM policy.
 */
export function imagePullPolicy(input: { partition: string; accountIds: readonly string[] }): PolicyDocument {
  return document(
    allow("PullPromotedImages", {
      Principal: { AWS: sorted(input.accountIds).map((a) => `arn:${input.partition}:iam::${a}:root`) },
      Action: ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
    }),
  );
}

/** The schedule: runs the export task in its cluster, passes exactly its two roles to ECS, dead-letters to its queue. */
export function schedulerRolePolicy(input: {
  /** The task definition's ARN without revision: any revision of the family may run. */
  taskDefinitionFamilyArn: string;
  clusterArn: string;
  taskRoleArn: string;
  executionRoleArn: string;
  deadLetterQueueArn: string;
}): PolicyDocument {
  return document(
    allow("RunExportTask", {
      Action: ["ecs:RunTask"],
      Resource: [`${input.taskDefinitionFamilyArn}:*`],
      Condition: { ArnEquals: { "ecs:cluster": input.clusterArn } },
    }),
    allow("PassExportTaskRoles", {
      Action: ["iam:PassRole"],
      Resource: sorted([input.taskRoleArn, input.executionRoleArn]),
      Condition: { StringEquals: { "iam:PassedToService": "ecs-tasks.amazonaws.com" } },
    }),
    allow("DeadLetterUndeliveredRuns", {
      Action: ["sqs:SendMessage"],
      Resource: [input.deadLetterQueueArn],
    }),
  );
}

/** Bucket policy of a created bucket: no plain-HTTP access, by anyone. */
export function denyInsecureTransportPolicy(bucketArn: string): PolicyDocument {
  return document({
    Sid: "DenyInsecureTransport",
    Effect: "Deny",
    Principal: "*",
    Action: "s3:*",
    Resource: [bucketArn, `${bucketArn}/*`],
    Condition: { Bool: { "aws:SecureTransport": "false" } },
  });
}

/**
 * The log bucket a stack creates for its bucket's server access logs: S3's logging service may write under the prefix,
 * on behalf of that bucket of this account only (the bucket policy AWS documents for log delivery, S3 User Guide
 * "Enabling Amazon S3 server access logging"); no plain-HTTP access.
 */
export function accessLogBucketPolicy(input: {
  logBucketArn: string;
  prefix: string;
  sourceBucketArn: string;
  accountId: string;
}): PolicyDocument {
  return document(
    allow("S3ServerAccessLogDelivery", {
      Principal: { Service: "logging.s3.amazonaws.com" },
      Action: "s3:PutObject",
      Resource: `${input.logBucketArn}/${input.prefix}*`,
      Condition: {
        ArnLike: { "aws:SourceArn": input.sourceBucketArn },
        StringEquals: { "aws:SourceAccount": input.accountId },
      },
    }),
    ...denyInsecureTransportPolicy(input.logBucketArn).Statement,
  );
}

/**
 * The stack's KMS key: the account's IAM policies decide for its principals (the default key policy's delegation),
 * and CloudWatch Logs of this region may use the key only for the task's log group (encryption context). A given key
 * is checked against the same statements (core/keyPolicy.ts).
 */
export function keyPolicy(scope: AccountScope, logGroupName: string): PolicyDocument {
  return document(enableIamPoliciesStatement(scope.partition, scope.accountId), logsKeyStatement(scope, logGroupName));
}
