/**
 * Operating the scheduled export: the stack's alerts topic (KMS-encrypted, with the configured email and HTTPS
 * subscriptions), the EventBridge rules that tell it when a run did not complete, the schedule's dead-letter queue
 * and its alarm, the "no run completed within N hours" composite alarm on the task's own metric, and a dashboard.
 */
import crypto from "node:crypto";
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import type { AwsContext } from "../awsContext";
import { noCompletedRunAlarms } from "./noCompletedRun";
import { alertsKeyPolicy, alertsTopicPolicy } from "./policies";
import { taskStopRules } from "./taskStopRules";
import { dashboardBody } from "./dashboard";
import { ALL_REGIONS, METRICS, METRIC_DIMENSIONS, METRIC_NAMESPACE } from "../../core/metrics";

export interface ExportMonitoringArgs {
  /** Physical base name (at most 40 characters): the topic, rules, queue, alarms and dashboard are named after it. */
  baseName: string;
  jobName: string;
  environment: string;
  hubRegions: string[];
  clusterArn: pulumi.Input<string>;
  taskDefinitionFamilyArn: pulumi.Input<string>;
  logGroupName: pulumi.Input<string>;
  email: string[];
  /** HTTPS endpoints (Pulumi secrets: webhook URLs carry tokens), each with its key (alertEndpointKey). */
  https: AlertEndpoint[];
  /** Absent: no such alarm (a one-time schedule). */
  noCompletedRunWithinHours?: number;
  /** A disabled schedule keeps the alarm, with its actions off. */
  scheduleEnabled: boolean;
  aws: AwsContext;
}

export interface AlertEndpoint {
  /** alertEndpointKey of the URL: names the subscription, so that removing one endpoint renames no other. */
  key: string;
  endpoint: pulumi.Input<string>;
}

/**
 * The key of an HTTPS endpoint: 16 hex digits of its sha256. The URL is a secret (it carries a token); its hash in a
 * resource name reveals nothing of it, and stays the same while the endpoint does.
 */
export function alertEndpointKey(url: string): string {
  return crypto.createHash("sha256").update(url).digest("hex").slice(0, 16);
}

/** Seconds a dead letter is kept: the SQS maximum, 14 days. */
const DEAD_LETTER_RETENTION_SECONDS = 1_209_600;

export class ExportMonitoring extends pulumi.ComponentResource {
  readonly topicArn: pulumi.Output<string>;
  readonly deadLetterQueueArn: pulumi.Output<string>;
  readonly deadLetterQueueUrl: pulumi.Output<string>;
  readonly dashboardName: pulumi.Output<string>;
  readonly alarmNames: pulumi.Output<string>[];

  constructor(name: string, args: ExportMonitoringArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:monitoring:ExportMonitoring", name, {}, opts);
    const parent = { parent: this };
    const { accountId, region } = args.aws;
    const base = args.baseName;

    // SNS's own AWS-managed key cannot be used by EventBridge or CloudWatch: the topic gets a key of its own.
    const key = new aws.kms.Key(
      `${name}-key`,
      {
        description: `Alerts of HRSYS export job ${args.jobName} (${args.environment}): SNS topic encryption`,
        enableKeyRotation: true,
        deletionWindowInDays: 30,
        policy: pulumi.output(args.aws).apply((scope) => JSON.stringify(alertsKeyPolicy(scope))),
      },
      parent,
    );
    new aws.kms.Alias(`${name}-key`, { name: `alias/${base}-alerts`, targetKeyId: key.keyId }, parent);

    const topic = new aws.sns.Topic(
      name,
      { name: `${base}-alerts`, displayName: `HRSYS export ${args.environment}`, kmsMasterKeyId: key.arn },
      parent,
    );
    this.topicArn = topic.arn;
    for (const address of args.email) {
      new aws.sns.TopicSubscription(
        `${name}-email-${address}`,
        { topic: topic.arn, protocol: "email", endpoint: address },
        parent,
      );
    }
    // Keyed by the endpoint, not its place in the list: removing one leaves the others (and their confirmations) alone.
    // The alias adopts a subscription that an earlier version named by position, the first time the list is applied.
    args.https.forEach(({ key, endpoint }, i) => {
      new aws.sns.TopicSubscription(
        `${name}-https-${key}`,
        { topic: topic.arn, protocol: "https", endpoint: pulumi.secret(endpoint), endpointAutoConfirms: false },
        { ...parent, aliases: [{ name: `${name}-https-${i + 1}` }] },
      );
    });

    // A run that did not complete: one rule per exit meaning, each with its own message.
    const rules = pulumi
      .output({
        clusterArn: args.clusterArn,
        taskDefinitionFamilyArn: args.taskDefinitionFamilyArn,
        logGroupName: args.logGroupName,
        region,
      })
      .apply((resolved) => taskStopRules({ ...args, ...resolved, stack: pulumi.getStack() }));
    const ruleKeys = ["execution-failed", "stopped", "other-exit", "not-run"] as const;
    const ruleArns: pulumi.Output<string>[] = [];
    for (const [i, ruleKey] of ruleKeys.entries()) {
      const spec = rules.apply((all) => {
        if (all[i].key !== ruleKey) throw new Error(`task stop rule ${i} is ${all[i].key}, expected ${ruleKey}`);
        return all[i];
      });
      const rule = new aws.cloudwatch.EventRule(
        `${name}-${ruleKey}`,
        {
          name: `${base}-${ruleKey}`,
          description: spec.description,
          eventPattern: spec.eventPattern.apply((p) => JSON.stringify(p)),
          state: "ENABLED",
        },
        parent,
      );
      new aws.cloudwatch.EventTarget(
        `${name}-${ruleKey}`,
        { rule: rule.name, targetId: "alerts-topic", arn: topic.arn, inputTransformer: spec.inputTransformer },
        parent,
      );
      ruleArns.push(rule.arn);
    }

    // The schedule's invocations that could not start the task.
    const deadLetters = new aws.sqs.Queue(
      `${name}-schedule-dlq`,
      {
        name: `${base}-schedule-dlq`,
        messageRetentionSeconds: DEAD_LETTER_RETENTION_SECONDS,
        sqsManagedSseEnabled: true,
      },
      parent,
    );
    this.deadLetterQueueArn = deadLetters.arn;
    this.deadLetterQueueUrl = deadLetters.url;

    // The alarms that notify the topic.
    const alarms: (aws.cloudwatch.MetricAlarm | aws.cloudwatch.CompositeAlarm)[] = [];
    // An alarm on any datapoint above zero in one period; no data is nothing to tell.
    const onAnyDatapoint = (key: string, alarm: aws.cloudwatch.MetricAlarmArgs) =>
      new aws.cloudwatch.MetricAlarm(
        `${name}-${key}`,
        {
          ...alarm,
          evaluationPeriods: 1,
          threshold: 0,
          comparisonOperator: "GreaterThanThreshold",
          treatMissingData: "notBreaching",
          alarmActions: [topic.arn],
          okActions: [topic.arn],
        },
        parent,
      );
    alarms.push(
      onAnyDatapoint("schedule-dead-letters", {
        name: `${base} schedule could not start the task`,
        alarmDescription: `EventBridge Scheduler could not start export job ${args.jobName} (${args.environment}): its invocations are in SQS queue ${base}-schedule-dlq (kept 14 days). Check the schedule's role and the task definition.`,
        namespace: "AWS/SQS",
        metricName: "ApproximateNumberOfMessagesVisible",
        dimensions: { QueueName: deadLetters.name },
        statistic: "Maximum",
        period: 300,
      }),
    );
    if (args.noCompletedRunWithinHours !== undefined) {
      // Two conditions without actions and the composite that notifies (components/monitoring/noCompletedRun.ts).
      const definition = noCompletedRunAlarms({
        baseName: base,
        jobName: args.jobName,
        environment: args.environment,
        hours: args.noCompletedRunWithinHours,
      });
      const conditions = [
        new aws.cloudwatch.MetricAlarm(`${name}-completed-within`, definition.completed, parent),
        new aws.cloudwatch.MetricAlarm(`${name}-failed-within`, definition.failed, parent),
      ];
      alarms.push(
        new aws.cloudwatch.CompositeAlarm(
          `${name}-no-completed-run`,
          {
            ...definition.alarm,
            actionsEnabled: args.scheduleEnabled,
            alarmActions: [topic.arn],
            okActions: [topic.arn],
          },
          { ...parent, dependsOn: conditions },
        ),
      );
    }
    // A message the broker refused for good in set_aside_after_runs runs no longer fails a run (task/README.md,
    // "Poison messages"): the run completes, so only this alarm tells someone to retry or discard it.
    alarms.push(
      onAnyDatapoint("messages-set-aside", {
        name: `${base} messages set aside`,
        alarmDescription:
          `A run of export job ${args.jobName} (${args.environment}) set messages aside: the hub's broker refused them for good in several runs, and no run retries them. ` +
          `'hub-export status --job-name ${args.jobName}' lists them with the reason; fix the cause, then 'hub-export retry --message-id <id>' or 'hub-export discard --message-id <id>'.`,
        namespace: METRIC_NAMESPACE,
        metricName: METRICS.setAside,
        dimensions: { [METRIC_DIMENSIONS.jobName]: args.jobName, [METRIC_DIMENSIONS.region]: ALL_REGIONS },
        statistic: "Sum",
        period: 3600,
      }),
    );
    this.alarmNames = alarms.map((a) => (a instanceof aws.cloudwatch.CompositeAlarm ? a.alarmName : a.name));

    new aws.sns.TopicPolicy(
      `${name}-topic`,
      {
        arn: topic.arn,
        policy: pulumi
          .output({ topicArn: topic.arn, accountId, ruleArns, alarmArns: alarms.map((a) => a.arn) })
          .apply((input) => JSON.stringify(alertsTopicPolicy(input))),
      },
      parent,
    );

    const dashboard = new aws.cloudwatch.Dashboard(
      `${name}-dashboard`,
      {
        dashboardName: base,
        dashboardBody: pulumi
          .output({
            region,
            jobName: args.jobName,
            hubRegions: args.hubRegions,
            deadLetterQueueName: deadLetters.name,
            alarmArns: alarms.map((a) => a.arn),
            logGroupName: args.logGroupName,
          })
          .apply(dashboardBody),
      },
      parent,
    );
    this.dashboardName = dashboard.dashboardName;

    this.registerOutputs({
      topicArn: this.topicArn,
      deadLetterQueueArn: this.deadLetterQueueArn,
      deadLetterQueueUrl: this.deadLetterQueueUrl,
      dashboardName: this.dashboardName,
    });
  }
}
