/**
 * The schedule that runs the export task: an EventBridge Scheduler schedule with an ECS RunTask target (Fargate, the
 * stack's network), and its own role that may run only this task family in this cluster and pass only its two roles.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import type { AwsContext } from "../awsContext";
import { schedulerRolePolicy, schedulerTrustPolicy } from "../policies";
import { childOptions } from "../options";

export interface ExportScheduleArgs {
  /** Physical name of the schedule and its role. */
  name: string;
  roleName: string;
  description: string;
  expression: string;
  timezone: string;
  enabled: boolean;
  clusterArn: pulumi.Input<string>;
  taskDefinitionArn: pulumi.Input<string>;
  taskDefinitionFamilyArn: pulumi.Input<string>;
  taskRoleArn: pulumi.Input<string>;
  executionRoleArn: pulumi.Input<string>;
  subnetIds: string[];
  securityGroupIds: string[];
  assignPublicIp: boolean;
  /** Where invocations that could not start the task go (components/monitoring). */
  deadLetterQueueArn: pulumi.Input<string>;
  aws: AwsContext;
}

export class ExportSchedule extends pulumi.ComponentResource {
  readonly scheduleName: pulumi.Output<string>;
  readonly scheduleArn: pulumi.Output<string>;

  constructor(name: string, args: ExportScheduleArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:task:ExportSchedule", name, {}, opts);
    const parent = { parent: this };
    const role = new aws.iam.Role(
      `${name}-role`,
      {
        name: args.roleName,
        description: `Schedule ${args.name}: runs the export task`,
        assumeRolePolicy: args.aws.accountId.apply((accountId) => JSON.stringify(schedulerTrustPolicy({ accountId }))),
      },
      parent,
    );
    const policy = new aws.iam.RolePolicy(
      `${name}-role`,
      {
        name: "run-export-task",
        role: role.id,
        policy: pulumi
          .output({
            taskDefinitionFamilyArn: args.taskDefinitionFamilyArn,
            clusterArn: args.clusterArn,
            taskRoleArn: args.taskRoleArn,
            executionRoleArn: args.executionRoleArn,
            deadLetterQueueArn: args.deadLetterQueueArn,
          })
          .apply((input) => JSON.stringify(schedulerRolePolicy(input))),
      },
      parent,
    );
    const schedule = new aws.scheduler.Schedule(
      name,
      {
        name: args.name,
        groupName: "default",
        description: args.description,
        scheduleExpression: args.expression,
        scheduleExpressionTimezone: args.timezone,
        state: args.enabled ? "ENABLED" : "DISABLED",
        flexibleTimeWindow: { mode: "OFF" },
        target: {
          arn: args.clusterArn,
          roleArn: role.arn,
          ecsParameters: {
            taskDefinitionArn: args.taskDefinitionArn,
            launchType: "FARGATE",
            platformVersion: "LATEST",
            taskCount: 1,
            networkConfiguration: {
              subnets: args.subnetIds,
              securityGroups: args.securityGroupIds,
              assignPublicIp: args.assignPublicIp,
            },
          },
          // Retries cover a failed RunTask call only; a failed run is resumed by the next one.
          retryPolicy: { maximumEventAgeInSeconds: 3600, maximumRetryAttempts: 3 },
          // An invocation that still could not start the task lands here, and its alarm tells the operators.
          deadLetterConfig: { arn: args.deadLetterQueueArn },
        },
      },
      // The role's policy, and everything the component waits for (a first run needs the whole installation).
      childOptions(this, opts, policy),
    );
    this.scheduleName = schedule.name;
    this.scheduleArn = schedule.arn;
    this.registerOutputs({ scheduleName: this.scheduleName, scheduleArn: this.scheduleArn });
  }
}
