/**
 * Operating the export, under mocks: the alerts topic and its key, the task-stop rules (their patterns run against
 * sample ECS events), the schedule's dead-letter queue and alarm, the no-run-completed alarm, the dashboard, and every
 * grant involved: exactly the stack's rules and alarms may publish, and nothing is granted by wildcard.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { PlanRun, PlannedResource } from "../../components/planner";
import { editKey, fixtureStack } from "../fixtures/stacks";
import { inputs, isSecretInput, ofType, one, outputs, planOf } from "../fixtures/plan";
import { configFromEngine } from "../../config/load";
import { ALL_REGIONS, METRICS, METRIC_NAMESPACE } from "../../core/metrics";
import { EXIT } from "../../core/exitCodes";
import { MESSAGE_PLACEHOLDERS } from "../../components/monitoring/taskStopRules";
import type { PolicyDocument } from "../../components/policies";
import { alertEndpointKey } from "../../components/monitoring/exportMonitoring";

const ACCOUNT = "123456789012";
const REGION = "us-east-1";
const SLUG = "hub-export-acme-qa";
const CLUSTER = `arn:aws:ecs:${REGION}:${ACCOUNT}:cluster/${SLUG}`;
const FAMILY = `arn:aws:ecs:${REGION}:${ACCOUNT}:task-definition/${SLUG}`;
const TOPIC = `arn:aws:sns:${REGION}:${ACCOUNT}:${SLUG}-alerts`;
const WEBHOOK = "https://hooks.example.com/services/T000/B000/secret-token-42";
const T = {
  component: "hubExport:monitoring:ExportMonitoring",
  key: "aws:kms/key:Key",
  topic: "aws:sns/topic:Topic",
  subscription: "aws:sns/topicSubscription:TopicSubscription",
  topicPolicy: "aws:sns/topicPolicy:TopicPolicy",
  rule: "aws:cloudwatch/eventRule:EventRule",
  target: "aws:cloudwatch/eventTarget:EventTarget",
  queue: "aws:sqs/queue:Queue",
  alarm: "aws:cloudwatch/metricAlarm:MetricAlarm",
  composite: "aws:cloudwatch/compositeAlarm:CompositeAlarm",
  dashboard: "aws:cloudwatch/dashboard:Dashboard",
  schedule: "aws:scheduler/schedule:Schedule",
  rolePolicy: "aws:iam/rolePolicy:RolePolicy",
};

/** The subset of EventBridge pattern matching the rules use: values, prefix, anything-but, exists; arrays of objects. */
function matches(pattern: unknown, event: unknown): boolean {
  if (Array.isArray(pattern)) {
    const values = (Array.isArray(event) ? event : [event]).filter((v) => v !== undefined);
    return pattern.some((p) => {
      if (p && typeof p === "object") {
        const rule = p as Record<string, unknown>;
        if ("exists" in rule) return rule.exists === values.length > 0;
        if ("prefix" in rule) return values.some((v) => typeof v === "string" && v.startsWith(rule.prefix as string));
        if ("anything-but" in rule) {
          const but = ([] as unknown[]).concat(rule["anything-but"]);
          return values.length > 0 && values.some((v) => !but.includes(v));
        }
        throw new Error(`unsupported pattern ${JSON.stringify(p)}`);
      }
      return values.includes(p);
    });
  }
  if (pattern && typeof pattern === "object") {
    return Object.entries(pattern as Record<string, unknown>).every(([k, p]) => {
      const value = Array.isArray(event)
        ? event.map((e) => (e as Record<string, unknown>)?.[k]).flat()
        : (event as Record<string, unknown> | undefined)?.[k];
      return matches(p, value);
    });
  }
  throw new Error(`bad pattern ${JSON.stringify(pattern)}`);
}

function ecsStop(detail: {
  exitCode?: number;
  stopCode: string;
  family?: string;
  cluster?: string;
  container?: string;
}) {
  return {
    source: "aws.ecs",
    "detail-type": "ECS Task State Change",
    detail: {
      clusterArn: detail.cluster ?? CLUSTER,
      taskDefinitionArn: `${detail.family ?? FAMILY}:7`,
      taskArn: `arn:aws:ecs:${REGION}:${ACCOUNT}:task/${SLUG}/0123456789abcdef`,
      lastStatus: "STOPPED",
      stopCode: detail.stopCode,
      stoppedReason: "Essential container in task exited",
      containers: [
        detail.exitCode === undefined
          ? { name: detail.container ?? "hub-export" }
          : { name: detail.container ?? "hub-export", exitCode: detail.exitCode },
      ],
    },
  };
}

function allPolicies(run: PlanRun): { where: string; doc: PolicyDocument }[] {
  const docs: { where: string; doc: PolicyDocument }[] = [];
  for (const r of run.resources) {
    const i = inputs(r);
    for (const field of ["policy", "assumeRolePolicy"]) {
      // IAM-style documents only (an ECR lifecycle policy is also called "policy").
      const doc = typeof i[field] === "string" && i[field].startsWith("{") ? JSON.parse(i[field]) : undefined;
      if (doc?.Version === "2012-10-17") docs.push({ where: `${r.type} ${r.name}.${field}`, doc });
    }
  }
  return docs;
}

describe("operating the export (stack qa, under mocks)", () => {
  let run: PlanRun;
  const monitoringResources = () => {
    const root = one(run, T.component).urn;
    return run.resources.filter((r) => r.parent === root);
  };
  const rules = () => ofType(run, T.rule);
  const alarm = (suffix: string) => ofType(run, T.alarm).find((a) => a.name.endsWith(suffix))!;
  /** The alarms with actions: the metric alarms that notify (not the composite's conditions) and the composite. */
  const notifying = () => [...ofType(run, T.alarm).filter((a) => inputs(a).alarmActions), ...ofType(run, T.composite)];

  beforeAll(async () => {
    const engine = editKey<Record<string, unknown>>(fixtureStack("qa").config, "alerts", (a) => ({
      ...a,
      https: [WEBHOOK],
    }));
    run = await planOf(engine, "qa");
  });

  it("encrypts the alerts topic with a key of its own, and subscribes the configured emails and endpoints", () => {
    const topic = one(run, T.topic);
    const key = one(run, T.key, "hub-export-monitoring-key");
    expect(inputs(topic)).toMatchObject({ name: `${SLUG}-alerts`, kmsMasterKeyId: outputs(key).arn });
    expect(inputs(key)).toMatchObject({ enableKeyRotation: true });
    const subs = ofType(run, T.subscription).map((s) => ({ ...inputs(s), secret: isSecretInput(s, "endpoint") }));
    expect(subs).toEqual([
      { topic: TOPIC, protocol: "email", endpoint: "hrsys-export-qa@acme.example.com", secret: false },
      { topic: TOPIC, protocol: "https", endpoint: WEBHOOK, endpointAutoConfirms: false, secret: true },
    ]);
  });

  it("keeps an https endpoint secret: never in the outputs, and only as a secret input", () => {
    expect(JSON.stringify(run.outputs)).not.toContain("secret-token-42");
    for (const r of run.resources) {
      if (JSON.stringify(inputs(r)).includes("secret-token-42"))
        expect(isSecretInput(r, "endpoint"), `${r.type} ${r.name}`).toBe(true);
    }
  });

  it("watches the task's stops with one rule per exit meaning, each message naming the job, the meaning and the logs", () => {
    expect(
      rules()
        .map((r) => inputs(r).name)
        .sort(),
    ).toEqual(["execution-failed", "not-run", "other-exit", "stopped"].map((k) => `${SLUG}-${k}`));
    const targets = ofType(run, T.target);
    expect(targets).toHaveLength(4);
    for (const target of targets) {
      const t = inputs(target);
      expect(t.arn).toBe(TOPIC);
      const template = JSON.parse(t.inputTransformer.inputTemplate) as string;
      expect(template).toContain("HRSYS export job HRSYS_EMPL_HUB_ACME_202611_QA (QA)");
      expect(template).toContain(`CloudWatch Logs group /ecs/${SLUG} (${REGION}), stream export/hub-export/TASK_ID`);
      for (const placeholder of template.match(/<[^>]+>/g) ?? [])
        expect(MESSAGE_PLACEHOLDERS).toContain(placeholder.slice(1, -1));
      expect(Object.keys(t.inputTransformer.inputPaths).sort()).toEqual([...MESSAGE_PLACEHOLDERS].sort());
    }
    const message = (key: string) =>
      JSON.parse(inputs(targets.find((t) => t.name.endsWith(key))!).inputTransformer.inputTemplate) as string;
    expect(message("execution-failed")).toContain("exited with code 3: ExecutionFailed");
    expect(message("stopped")).toMatch(
      /exited with code 1: refused before touching any data, or stopped mid-way \(the next run resumes its transaction\)/,
    );
    expect(message("stopped")).toContain(
      "A stop code UserInitiated, ServiceSchedulerInitiated, SpotInterruption, TerminationNotice means ECS stopped the task (SIGTERM): the run recorded a Stopped row with reason SIGTERM",
    );
    expect(message("other-exit")).toContain("exited with code <exitCode>: 2 = usage error");
    expect(message("not-run")).toContain("without an exit code");
  });

  it.each<[string, Parameters<typeof ecsStop>[0], string[]]>([
    ["a completed run", { exitCode: 0, stopCode: "EssentialContainerExited" }, []],
    [
      "an ExecutionFailed run",
      { exitCode: EXIT.executionFailed, stopCode: "EssentialContainerExited" },
      ["execution-failed"],
    ],
    ["a refused or stopped run", { exitCode: EXIT.failed, stopCode: "EssentialContainerExited" }, ["stopped"]],
    ["a run stopped by an operator", { exitCode: EXIT.failed, stopCode: "UserInitiated" }, ["stopped"]],
    [
      "a task ECS stopped with SIGTERM while it was starting",
      { exitCode: 143, stopCode: "ServiceSchedulerInitiated" },
      ["stopped"],
    ],
    ["an internal error", { exitCode: EXIT.internal, stopCode: "EssentialContainerExited" }, ["other-exit"]],
    ["a killed task", { exitCode: 137, stopCode: "EssentialContainerExited" }, ["other-exit"]],
    ["a task that failed to start", { stopCode: "TaskFailedToStart" }, ["not-run"]],
    [
      "another stack's task",
      {
        exitCode: 3,
        stopCode: "EssentialContainerExited",
        family: `arn:aws:ecs:${REGION}:${ACCOUNT}:task-definition/other`,
      },
      [],
    ],
    [
      "a task of the family in another cluster",
      { exitCode: 3, stopCode: "EssentialContainerExited", cluster: `arn:aws:ecs:${REGION}:${ACCOUNT}:cluster/other` },
      [],
    ],
  ])("%s notifies %j", (_what, detail, expected) => {
    const event = ecsStop(detail);
    const fired = rules()
      .filter((r) => matches(JSON.parse(inputs(r).eventPattern), event))
      .map((r) => (inputs(r).name as string).slice(SLUG.length + 1));
    expect(fired).toEqual(expected);
  });

  it("dead-letters the schedule's undeliverable invocations, lets its role send there, and alarms on the queue", () => {
    const queue = one(run, T.queue);
    expect(inputs(queue)).toMatchObject({
      name: `${SLUG}-schedule-dlq`,
      messageRetentionSeconds: 1209600,
      sqsManagedSseEnabled: true,
    });
    const schedule = one(run, T.schedule);
    expect(inputs(schedule).target.deadLetterConfig).toEqual({ arn: outputs(queue).arn });
    const policy = JSON.parse(
      inputs(ofType(run, T.rolePolicy).find((p) => inputs(p).name === "run-export-task")!).policy,
    ) as PolicyDocument;
    expect(policy.Statement.find((s) => s.Sid === "DeadLetterUndeliveredRuns")).toEqual({
      Sid: "DeadLetterUndeliveredRuns",
      Effect: "Allow",
      Action: ["sqs:SendMessage"],
      Resource: [outputs(queue).arn],
    });
    expect(inputs(alarm("schedule-dead-letters"))).toMatchObject({
      namespace: "AWS/SQS",
      metricName: "ApproximateNumberOfMessagesVisible",
      dimensions: { QueueName: `${SLUG}-schedule-dlq` },
      comparisonOperator: "GreaterThanThreshold",
      threshold: 0,
      alarmActions: [TOPIC],
    });
  });

  it("alarms when no run completed within N hours once a run ended without completing: a composite of two silent conditions", () => {
    const config = configFromEngine(fixtureStack("qa").config, "qa");
    const n = config.alerts.noCompletedRunWithinHours!;
    expect(n).toBe(30);
    const metric = {
      namespace: METRIC_NAMESPACE,
      metricName: METRICS.completed,
      dimensions: { JobName: config.jobName, Region: ALL_REGIONS },
      period: 3600,
    };
    const completed = alarm("completed-within");
    const failed = alarm("failed-within");
    expect(inputs(completed)).toMatchObject({
      name: `${SLUG} condition: a run completed within 30 hours`,
      ...metric,
      statistic: "Maximum",
      evaluationPeriods: n,
      datapointsToAlarm: 1,
      threshold: 1,
      comparisonOperator: "GreaterThanOrEqualToThreshold",
      treatMissingData: "notBreaching",
      actionsEnabled: false,
    });
    expect(inputs(failed)).toMatchObject({
      name: `${SLUG} condition: a run ended without completing within 7 days`,
      ...metric,
      statistic: "Minimum",
      evaluationPeriods: 168,
      datapointsToAlarm: 1,
      threshold: 1,
      comparisonOperator: "LessThanThreshold",
      treatMissingData: "notBreaching",
      actionsEnabled: false,
    });
    // The conditions notify nobody; the composite does.
    for (const c of [completed, failed]) expect(inputs(c)).not.toHaveProperty("alarmActions");
    const composite = one(run, T.composite);
    expect(inputs(composite)).toMatchObject({
      alarmName: `${SLUG} no run completed within 30 hours`,
      alarmRule: `ALARM("${SLUG} condition: a run ended without completing within 7 days") AND NOT ALARM("${SLUG} condition: a run completed within 30 hours")`,
      actionsEnabled: true,
      alarmActions: [TOPIC],
      okActions: [TOPIC],
    });
    expect(composite.dependsOn).toEqual(expect.arrayContaining([completed.urn, failed.urn]));
    expect(inputs(composite).alarmDescription).toContain("A new stack is not in ALARM: it waits for a run to end");
  });

  it("alarms on messages set aside (a run that sets one aside completes, so nothing else tells anyone)", () => {
    const config = configFromEngine(fixtureStack("qa").config, "qa");
    expect(inputs(alarm("messages-set-aside"))).toMatchObject({
      name: `${SLUG} messages set aside`,
      namespace: METRIC_NAMESPACE,
      metricName: METRICS.setAside,
      dimensions: { JobName: config.jobName, Region: ALL_REGIONS },
      statistic: "Sum",
      comparisonOperator: "GreaterThanThreshold",
      threshold: 0,
      treatMissingData: "notBreaching",
      alarmActions: [TOPIC],
      okActions: [TOPIC],
    });
    expect(inputs(alarm("messages-set-aside")).alarmDescription).toContain("hub-export retry --message-id");
  });

  it("lets exactly the stack's rules and alarms publish to the topic", () => {
    const policy = JSON.parse(inputs(one(run, T.topicPolicy)).policy) as PolicyDocument;
    expect(inputs(one(run, T.topicPolicy)).arn).toBe(TOPIC);
    expect(policy.Statement).toEqual([
      {
        Sid: "TaskStopRules",
        Effect: "Allow",
        Principal: { Service: "events.amazonaws.com" },
        Action: "sns:Publish",
        Resource: TOPIC,
        Condition: {
          ArnEquals: {
            "aws:SourceArn": rules()
              .map((r) => outputs(r).arn)
              .sort(),
          },
        },
      },
      {
        Sid: "ExportAlarms",
        Effect: "Allow",
        Principal: { Service: "cloudwatch.amazonaws.com" },
        Action: "sns:Publish",
        Resource: TOPIC,
        Condition: {
          ArnEquals: {
            "aws:SourceArn": notifying()
              .map((a) => outputs(a).arn)
              .sort(),
          },
          StringEquals: { "aws:SourceAccount": ACCOUNT },
        },
      },
    ]);
  });

  it("grants nothing by wildcard: every action named but EventBridge's documented one, Resource * only in its key policy (the key itself)", () => {
    // The monitoring component's policies, and the schedule role's (which gains the dead-letter queue).
    const root = one(run, T.component).urn;
    const docs = allPolicies(run).filter(
      (d) => d.where.includes("hub-export-monitoring") || d.where.includes("hub-export-schedule"),
    );
    expect(docs.map((d) => d.where)).toEqual(
      expect.arrayContaining([
        `${T.key} hub-export-monitoring-key.policy`,
        `${T.topicPolicy} hub-export-monitoring-topic.policy`,
        `${T.rolePolicy} hub-export-schedule-role.policy`,
      ]),
    );
    expect(run.resources.filter((r) => r.parent === root && r.type === T.key)).toHaveLength(1);
    for (const { where, doc } of docs) {
      // A Deny (the bucket's TLS-only policy) grants nothing: only Allow statements are checked.
      for (const s of doc.Statement.filter((x) => x.Effect === "Allow")) {
        // kms:GenerateDataKey* is what AWS documents for EventBridge publishing to an encrypted topic.
        for (const action of ([] as string[]).concat(s.Action))
          if (!(s.Sid === "EventBridgePublishes" && action === "kms:GenerateDataKey*"))
            expect(action, where).not.toContain("*");
        expect(s.Principal, where).not.toBe("*");
        if (s.Resource === "*" || (Array.isArray(s.Resource) && s.Resource.includes("*"))) {
          expect(where.startsWith(T.key), where).toBe(true);
        }
      }
    }
    const key = JSON.parse(inputs(one(run, T.key, "hub-export-monitoring-key")).policy) as PolicyDocument;
    expect(key.Statement.map((s) => s.Sid)).toEqual([
      "KeyAdministrationByTheAccount",
      "AccountPublishesThroughSns",
      "CloudWatchPublishes",
      "EventBridgePublishes",
    ]);
    expect(key.Statement[2]).toEqual({
      Sid: "CloudWatchPublishes",
      Effect: "Allow",
      Principal: { Service: "cloudwatch.amazonaws.com" },
      Action: ["kms:Decrypt", "kms:GenerateDataKey"],
      Resource: "*",
      // Only for this account's alarms: the service acts for any account.
      Condition: { StringEquals: { "aws:SourceAccount": ACCOUNT } },
    });
    // No source condition: SNS does not support one for EventBridge-to-encrypted topics (SNS developer guide, "Enable
    // compatibility between event sources from AWS services and encrypted topics"); the topic policy admits only the
    // stack's rules (TaskStopRules above).
    expect(key.Statement[3]).toEqual({
      Sid: "EventBridgePublishes",
      Effect: "Allow",
      Principal: { Service: "events.amazonaws.com" },
      Action: ["kms:Decrypt", "kms:GenerateDataKey*"],
      Resource: "*",
    });
    expect(key.Statement[0].Principal).toEqual({ AWS: `arn:aws:iam::${ACCOUNT}:root` });
  });

  it("shows the run metrics per hub region, the dead letters, the alarms and the latest runs on one dashboard", () => {
    const d = one(run, T.dashboard);
    expect(inputs(d).dashboardName).toBe(SLUG);
    const body = JSON.parse(inputs(d).dashboardBody);
    const metrics = body.widgets
      .filter((w: { type: string }) => w.type === "metric")
      .flatMap((w: { properties: { metrics: unknown[][] } }) => w.properties.metrics);
    const names = new Set(metrics.map((m: unknown[]) => `${String(m[1])} ${m.slice(2, -1).join(" ")}`));
    for (const region of ["US", "EU"])
      for (const m of [METRICS.published, METRICS.failed, METRICS.ersEntities])
        expect(names).toContain(`${m} JobName HRSYS_EMPL_HUB_ACME_202611_QA Region ${region}`);
    for (const m of [
      METRICS.heldBack,
      METRICS.completed,
      METRICS.executionFailed,
      METRICS.stopped,
      METRICS.refused,
      METRICS.duration,
      METRICS.linksOpen,
    ])
      expect(names).toContain(`${m} JobName HRSYS_EMPL_HUB_ACME_202611_QA Region ALL`);
    expect(names).toContain(`ApproximateNumberOfMessagesVisible QueueName ${SLUG}-schedule-dlq`);
    expect(body.widgets.find((w: { type: string }) => w.type === "alarm").properties.alarms).toEqual(
      notifying()
        .map((a) => outputs(a).arn)
        .sort(),
    );
    expect(body.widgets.find((w: { type: string }) => w.type === "log").properties.query).toContain(
      `SOURCE '/ecs/${SLUG}'`,
    );
  });

  it("exports the alerts and what run-now needs", () => {
    expect(run.outputs.alerts).toEqual({
      topicArn: TOPIC,
      deadLetterQueueUrl: `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${SLUG}-schedule-dlq`,
      dashboard: SLUG,
      alarms: [
        `${SLUG} schedule could not start the task`,
        `${SLUG} no run completed within 30 hours`,
        `${SLUG} messages set aside`,
      ],
    });
    expect(run.outputs.runTask).toEqual({
      region: REGION,
      cluster: CLUSTER,
      taskDefinition: `${FAMILY}:1`,
      containerName: "hub-export",
      subnetIds: ["subnet-0a1b2c3d4e5f60718", "subnet-0f1e2d3c4b5a69788"],
      securityGroupIds: ["sg-0123456789abcdef0"],
      assignPublicIp: false,
      logGroup: `/ecs/${SLUG}`,
      logStreamPrefix: "export",
    });
    expect(monitoringResources().length).toBeGreaterThan(10);
  });
});

describe("operating the export: schedule variants", () => {
  const alarms = (run: PlanRun): PlannedResource[] => ofType(run, T.alarm);

  it("a disabled schedule keeps the no-completed-run alarm with its actions off", async () => {
    const run = await planOf(
      editKey<Record<string, unknown>>(fixtureStack("qa").config, "schedule", (s) => ({ ...s, enabled: false })),
      "qa",
    );
    expect(inputs(one(run, T.composite)).actionsEnabled).toBe(false);
  });

  it("keys the https subscriptions by their endpoint: removing one renames none of the others", async () => {
    const other = "https://hooks.example.com/services/T000/B111/other-token-7";
    const subscriptions = async (https: string[]) =>
      ofType(
        await planOf(
          editKey<Record<string, unknown>>(fixtureStack("qa").config, "alerts", (a) => ({ ...a, https })),
          "qa",
        ),
        T.subscription,
      ).filter((s) => inputs(s).protocol === "https");
    const both = await subscriptions([WEBHOOK, other]);
    const after = await subscriptions([other]);
    const key = (url: string) => `hub-export-monitoring-https-${alertEndpointKey(url)}`;
    expect(both.map((s) => s.name)).toEqual([key(WEBHOOK), key(other)]);
    expect(after.map((s) => s.name)).toEqual([key(other)]);
    expect(inputs(after[0]).endpoint).toBe(other);
    // A hash of the URL, never the URL or its token, in the name; 16 hex digits.
    expect(alertEndpointKey(other)).toMatch(/^[0-9a-f]{16}$/);
    for (const s of both) expect(s.name).not.toMatch(/token|hooks/);
  });

  it("a one-time schedule has no no-completed-run alarm; an explicit N is used as given", async () => {
    const once = await planOf(
      editKey<Record<string, unknown>>(fixtureStack("qa").config, "schedule", (s) => ({
        ...s,
        expression: "at(2027-03-01T03:00:00)",
      })),
      "qa",
    );
    expect(
      alarms(once)
        .map((a) => a.name)
        .sort(),
    ).toEqual(["hub-export-monitoring-messages-set-aside", "hub-export-monitoring-schedule-dead-letters"]);
    expect(ofType(once, T.composite)).toEqual([]);
    const explicit = await planOf(
      editKey<Record<string, unknown>>(fixtureStack("qa").config, "alerts", (a) => ({
        ...a,
        noCompletedRunWithinHours: 50,
      })),
      "qa",
    );
    expect(inputs(alarms(explicit).find((a) => a.name.endsWith("completed-within"))!).evaluationPeriods).toBe(50);
    expect(inputs(one(explicit, T.composite)).alarmName).toBe("hub-export-acme-qa no run completed within 50 hours");
  });
});
