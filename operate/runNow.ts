/**
 * `hub-export run-now`: starts the export task once, exactly as the schedule does (the stack's cluster, task
 * definition and network, from its `runTask` output), and with `wait` follows its log to the end and returns its exit
 * code. The AWS SDK's endpoint override (AWS_ENDPOINT_URL, or `endpoint`) points its clients elsewhere.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { ECSClient, DescribeTasksCommand, ListTasksCommand, RunTaskCommand, type Task } from "@aws-sdk/client-ecs";
import { CloudWatchLogsClient, GetLogEventsCommand } from "@aws-sdk/client-cloudwatch-logs";
import { UserError } from "../core/errors";
import { EXIT, exitMeaning, stoppedByEcs } from "../core/exitCodes";
import { redact } from "../core/redact";
import type { RunTaskOutputs } from "./stackOutputs";

export interface RunNowOptions {
  task: RunTaskOutputs;
  wait: boolean;
  /** Who started it: ECS `startedBy` (shows in the console and in the failure alert). */
  startedBy: string;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** Between two looks at the task and its log. */
  pollMs?: number;
  /** Give up following after this long (the task keeps running). */
  timeoutMs?: number;
  /** Another endpoint for both APIs (tests); AWS_ENDPOINT_URL does the same from the environment. */
  endpoint?: string;
}

/** The family name of a task definition ARN: `.../task-definition/<family>:<revision>`. */
function familyOf(taskDefinitionArn: string): string {
  return taskDefinitionArn.replace(/^.*:task-definition\//, "").replace(/:\d+$/, "");
}

export async function runNow(o: RunNowOptions): Promise<number> {
  // The project runs on Node 20.19+ (its Pulumi pins); the SDK's notice about its own future Node 22 floor is noise
  // in an operator's terminal. An explicit setting wins.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
  const config = { region: o.task.region, ...(o.endpoint ? { endpoint: o.endpoint } : {}) };
  const ecs = new ECSClient(config);
  const logs = new CloudWatchLogsClient(config);
  try {
    // A run already in progress would be refused by the client's run lock: say so before starting another.
    const running = await ecs.send(
      new ListTasksCommand({
        cluster: o.task.cluster,
        family: familyOf(o.task.taskDefinition),
        desiredStatus: "RUNNING",
      }),
    );
    if (running.taskArns?.length) {
      throw new UserError([
        `a run of ${familyOf(o.task.taskDefinition)} is already running: ${running.taskArns.join(", ")}`,
        "a second one would be refused by the client's run lock; wait for it to end",
      ]);
    }
    const started = await ecs.send(
      new RunTaskCommand({
        cluster: o.task.cluster,
        taskDefinition: o.task.taskDefinition,
        launchType: "FARGATE",
        platformVersion: "LATEST",
        count: 1,
        startedBy: o.startedBy,
        networkConfiguration: {
          awsvpcConfiguration: {
            subnets: o.task.subnetIds,
            securityGroups: o.task.securityGroupIds,
            assignPublicIp: o.task.assignPublicIp ? "ENABLED" : "DISABLED",
          },
        },
      }),
    );
    const task = started.tasks?.[0];
    if (!task?.taskArn) {
      const reasons = (started.failures ?? []).map(
        (f) => `${f.arn ?? o.task.taskDefinition}: ${f.reason ?? "unknown"}${f.detail ? ` (${f.detail})` : ""}`,
      );
      throw new UserError([
        `ECS did not start the task`,
        ...(reasons.length ? reasons : ["no task and no failure in the answer"]),
      ]);
    }
    // The awslogs stream of the task: `<prefix>/<container>/<task id>`.
    const stream = `${o.task.logStreamPrefix}/${o.task.containerName}/${task.taskArn.split("/").pop()}`;
    o.stdout.write(`task        ${task.taskArn}\nlog group   ${o.task.logGroup}\nlog stream  ${stream}\n`);
    o.stdout.write(
      `follow      aws logs tail ${o.task.logGroup} --follow --log-stream-names ${stream} --region ${o.task.region}\n`,
    );
    if (!o.wait) return 0;
    return await follow(o, ecs, logs, task.taskArn, stream);
  } catch (err) {
    if (err instanceof UserError) throw err;
    // An AWS error (credentials, permissions, a missing cluster): its name and message, one line.
    const e = err as Error & { name?: string };
    if (e?.name && e.name !== "Error" && typeof e.message === "string")
      throw new UserError(`AWS: ${e.name}: ${e.message.split("\n")[0]}`);
    throw err;
  } finally {
    ecs.destroy();
    logs.destroy();
  }
}

/** Prints the task's log lines as they arrive until it stops; its exit code, or 1 when it stopped without one. */
async function follow(
  o: RunNowOptions,
  ecs: ECSClient,
  logs: CloudWatchLogsClient,
  taskArn: string,
  stream: string,
): Promise<number> {
  const pollMs = o.pollMs ?? 5000;
  const deadline = o.timeoutMs === undefined ? Infinity : Date.now() + o.timeoutMs;
  let token: string | undefined;
  let lastStatus = "";
  const drain = async (): Promise<void> => {
    for (;;) {
      let page;
      try {
        page = await logs.send(
          new GetLogEventsCommand({
            logGroupName: o.task.logGroup,
            logStreamName: stream,
            startFromHead: true,
            nextToken: token,
          }),
        );
      } catch (err) {
        // The stream appears with the container's first line.
        if ((err as Error).name === "ResourceNotFoundException") return;
        throw err;
      }
      // The task's own JSON lines; redacted all the same (core/redact.ts): nothing in them may drive the terminal.
      for (const event of page.events ?? []) o.stdout.write(`${redact(event.message ?? "")}\n`);
      const next = page.nextForwardToken;
      const same = next === token;
      token = next;
      if (same || !page.events?.length) return;
    }
  };
  for (;;) {
    const described = await ecs.send(new DescribeTasksCommand({ cluster: o.task.cluster, tasks: [taskArn] }));
    const task: Task | undefined = described.tasks?.[0];
    if (!task)
      throw new UserError(`task ${taskArn} is gone from ECS (${described.failures?.[0]?.reason ?? "not found"})`);
    if (task.lastStatus && task.lastStatus !== lastStatus) {
      lastStatus = task.lastStatus;
      o.stderr.write(`task ${lastStatus.toLowerCase()}\n`);
    }
    await drain();
    if (task.lastStatus === "STOPPED") {
      await drain();
      const container = task.containers?.find((c) => c.name === o.task.containerName);
      if (container?.exitCode === undefined || container.exitCode === null) {
        o.stderr.write(
          `the task stopped without an exit code: ${task.stopCode ?? "unknown"}: ${redact(task.stoppedReason ?? container?.reason ?? "no reason given")}\n`,
        );
        return 1;
      }
      // SIGTERM from ECS (an operator's stop-task, a deployment, a Fargate retirement): a clean stop, not a failure.
      const byEcs = stoppedByEcs(container.exitCode, task.stopCode)
        ? ` stopped by ECS (${task.stopCode}: ${redact(task.stoppedReason ?? "no reason given")});`
        : "";
      o.stderr.write(`exit code ${container.exitCode}:${byEcs} ${exitMeaning(container.exitCode)}\n`);
      return container.exitCode;
    }
    if (Date.now() > deadline) {
      o.stderr.write(`stopped following after the timeout; the task keeps running: ${taskArn}\n`);
      return EXIT.followTimeout;
    }
    await sleep(pollMs);
  }
}
