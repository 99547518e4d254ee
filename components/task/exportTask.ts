/**
 * The export task (procedure step 9): the ECS cluster (or `hubExport:task.clusterArn`), the log group, the task and
 * execution roles and the Fargate task definition running `hub-export run`. The task reads its connection records
 * itself with the task role: nothing is injected into the container, and the execution role cannot read them.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import type { AwsContext } from "../awsContext";
import type { StackConfig } from "../../config/schema";
import { CONCURRENCY_ENV, type ConcurrencyConfig } from "../../core/concurrency";
import { SCHEDULE_ENV, STOP_TIMEOUT_SECONDS } from "../../core/runDeadline";
import { ecsTaskExecutionTrustPolicy, ecsTasksTrustPolicy, executionRolePolicy, taskRolePolicy } from "../policies";

export const CONTAINER_NAME = "hub-export";
/** awslogs stream prefix: a run's stream is `<prefix>/<container>/<task id>`. */
export const LOG_STREAM_PREFIX = "export";

export interface ExportTaskArgs {
  /** Physical name of the cluster and the task family. */
  name: string;
  /** `/ecs/<name>`: encrypted with the stack's key (whose policy lets CloudWatch Logs use it for this group). */
  logGroupName: string;
  roleNames: { task: string; execution: string };
  /** Run in this cluster instead of creating one. */
  existingClusterArn?: string;
  cpu: number;
  memory: number;
  logRetentionDays: number;
  /** prod: a rename or destroy leaves the log group and its logs (they expire with their retention). */
  retainLogs: boolean;
  imageUri: pulumi.Input<string>;
  repositoryArn: pulumi.Input<string>;
  bucketName: pulumi.Input<string>;
  bucketArn: pulumi.Input<string>;
  /** This job's rendered pipeline (pipelines/hub_hrsys_export/<JOB_NAME>.Json): the task reads it and no other. */
  definitionKey: string;
  scriptsPrefix: string;
  /** The CLS load sheet the run checks its codes against (hub-configuration/<JOB_NAME>/cls/...), and whether it holds back. */
  cls?: { sheetKey: string; strict: boolean };
  /** `hubExport:connectionStore.prefix`; the task reads `<prefix>/connection-strings/<System Name>`. */
  connectionStorePrefix: string;
  /** ARNs of the connection records: the task role may read exactly these. */
  connectionSecretArns: pulumi.Input<string>[];
  kmsKeyArn: pulumi.Input<string>;
  /** `hubExport:concurrency`: the floors and ceilings of the task's adaptive concurrency. */
  concurrency: ConcurrencyConfig;
  /** `hubExport:schedule.expression`: the task derives its run deadline from the schedule's period. */
  schedule: string;
  aws: AwsContext;
}

/** The container's inputs that resolve at deploy time; the rest are the task's args. */
type ContainerDefinitionInput = Pick<
  ExportTaskArgs,
  "definitionKey" | "scriptsPrefix" | "connectionStorePrefix" | "concurrency" | "schedule" | "cls"
> & { image: string; region: string; logGroupName: string; bucketName: string };

/** The task definition's one container; no `secrets`: the task reads its connection records with the task role. */
function exportContainerDefinition(input: ContainerDefinitionInput) {
  const cls = input.cls
    ? ["--cls", `s3://${input.bucketName}/${input.cls.sheetKey}`, "--cls-mode", input.cls.strict ? "strict" : "report"]
    : [];
  return {
    name: CONTAINER_NAME,
    image: input.image,
    // The image's unprivileged user `node` (task/Dockerfile), said again here so that no image can run the task as root.
    user: "1000:1000",
    essential: true,
    command: [
      "run",
      "--definition",
      `s3://${input.bucketName}/${input.definitionKey}`,
      "--scripts",
      `s3://${input.bucketName}/${input.scriptsPrefix}`,
      "--connections",
      `secretsmanager:${input.connectionStorePrefix}`,
      ...cls,
    ],
    environment: [
      { name: "AWS_REGION", value: input.region },
      { name: CONCURRENCY_ENV, value: JSON.stringify(input.concurrency) },
      { name: SCHEDULE_ENV, value: input.schedule },
    ],
    logConfiguration: {
      logDriver: "awslogs",
      options: {
        "awslogs-group": input.logGroupName,
        "awslogs-region": input.region,
        "awslogs-stream-prefix": LOG_STREAM_PREFIX,
      },
    },
    stopTimeout: STOP_TIMEOUT_SECONDS,
  };
}

export class ExportTask extends pulumi.ComponentResource {
  readonly clusterArn: pulumi.Output<string>;
  readonly taskDefinitionArn: pulumi.Output<string>;
  /** ARN without revision: `ecs:RunTask` on `<this>:*` covers every revision. */
  readonly taskDefinitionFamilyArn: pulumi.Output<string>;
  readonly taskRoleArn: pulumi.Output<string>;
  readonly executionRoleArn: pulumi.Output<string>;
  readonly logGroupName: pulumi.Output<string>;

  constructor(name: string, args: ExportTaskArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:task:ExportTask", name, {}, opts);
    const parent = { parent: this };
    const { region } = args.aws;

    if (args.existingClusterArn) {
      this.clusterArn = pulumi.output(args.existingClusterArn);
    } else {
      const cluster = new aws.ecs.Cluster(
        name,
        { name: args.name, settings: [{ name: "containerInsights", value: "enabled" }] },
        parent,
      );
      this.clusterArn = cluster.arn;
    }

    const logGroup = new aws.cloudwatch.LogGroup(
      name,
      { name: args.logGroupName, retentionInDays: args.logRetentionDays, kmsKeyId: args.kmsKeyArn },
      { ...parent, ...(args.retainLogs ? { retainOnDelete: true } : {}) },
    );
    this.logGroupName = logGroup.name;

    const trust = pulumi.output(args.aws).apply((scope) => JSON.stringify(ecsTasksTrustPolicy(scope)));

    const taskRole = new aws.iam.Role(
      `${name}-task-role`,
      {
        name: args.roleNames.task,
        description: `Export task ${args.name}: reads its definition, scripts and connection records`,
        assumeRolePolicy: trust,
      },
      parent,
    );
    new aws.iam.RolePolicy(
      `${name}-task-role`,
      {
        name: "export-task-access",
        role: taskRole.id,
        policy: pulumi
          .all([args.bucketArn, pulumi.all(args.connectionSecretArns), args.kmsKeyArn, region])
          .apply(([bucketArn, connectionSecretArns, kmsKeyArn, r]) =>
            JSON.stringify(
              taskRolePolicy({
                bucketArn,
                readPrefixes: [args.definitionKey, args.scriptsPrefix, ...(args.cls ? [args.cls.sheetKey] : [])],
                connectionSecretArns,
                kmsKeyArn,
                region: r,
              }),
            ),
          ),
      },
      parent,
    );

    const executionRole = new aws.iam.Role(
      `${name}-execution-role`,
      {
        name: args.roleNames.execution,
        description: `Starts export task ${args.name}: pulls its image, writes its logs`,
        assumeRolePolicy: JSON.stringify(ecsTaskExecutionTrustPolicy()),
      },
      parent,
    );
    new aws.iam.RolePolicy(
      `${name}-execution-role`,
      {
        name: "export-task-start",
        role: executionRole.id,
        policy: pulumi
          .all([args.repositoryArn, logGroup.arn])
          .apply(([repositoryArn, logGroupArn]) => JSON.stringify(executionRolePolicy({ repositoryArn, logGroupArn }))),
      },
      parent,
    );

    const containerDefinitions = pulumi
      .all([args.imageUri, region, logGroup.name, args.bucketName])
      .apply(([image, r, logGroupName, bucketName]) =>
        JSON.stringify([exportContainerDefinition({ ...args, image, region: r, logGroupName, bucketName })]),
      );

    const taskDefinition = new aws.ecs.TaskDefinition(
      name,
      {
        family: args.name,
        requiresCompatibilities: ["FARGATE"],
        networkMode: "awsvpc",
        cpu: String(args.cpu),
        memory: String(args.memory),
        runtimePlatform: { operatingSystemFamily: "LINUX", cpuArchitecture: "X86_64" },
        taskRoleArn: taskRole.arn,
        executionRoleArn: executionRole.arn,
        containerDefinitions,
      },
      parent,
    );

    this.taskDefinitionArn = taskDefinition.arn;
    this.taskDefinitionFamilyArn = taskDefinition.arnWithoutRevision;
    this.taskRoleArn = taskRole.arn;
    this.executionRoleArn = executionRole.arn;
    this.registerOutputs({
      clusterArn: this.clusterArn,
      taskDefinitionArn: this.taskDefinitionArn,
      taskRoleArn: this.taskRoleArn,
      executionRoleArn: this.executionRoleArn,
      logGroupName: this.logGroupName,
    });
  }
}

/** A ready `aws ecs run-task ...` for an operator: one run now, on the schedule's exact task and network. */
export function runTaskCommand(
  input: { region: string; clusterArn: string; taskDefinitionArn: string } & StackConfig["network"],
): string {
  const network = `awsvpcConfiguration={subnets=[${input.subnetIds.join(",")}],securityGroups=[${input.securityGroupIds.join(",")}],assignPublicIp=${input.assignPublicIp ? "ENABLED" : "DISABLED"}}`;
  return [
    "aws ecs run-task",
    `--region ${input.region}`,
    `--cluster ${input.clusterArn}`,
    `--task-definition ${input.taskDefinitionArn}`,
    "--launch-type FARGATE",
    `--network-configuration '${network}'`,
    `--started-by hub-export-operator`,
  ].join(" ");
}
