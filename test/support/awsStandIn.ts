/**
 * A loopback stand-in for the two AWS JSON APIs `hub-export run-now` calls: ECS (RunTask, ListTasks, DescribeTasks)
 * and CloudWatch Logs (GetLogEvents), spoken as the real services speak them (awsJson1_1: POST /, X-Amz-Target,
 * JSON bodies, `__type` errors). The real SDK clients reach it through their endpoint override. A started task runs a
 * scripted life: PROVISIONING, RUNNING (its log stream appears), then STOPPED with the scripted exit code.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface TaskScript {
  /** DescribeTasks calls that see the task RUNNING before it stops. */
  runningPolls: number;
  /** Container exit code; undefined: stopped without one (stopCode TaskFailedToStart). */
  exitCode?: number;
  stopCode?: string;
  stoppedReason?: string;
  /** Log lines: the first half appear while RUNNING, the rest when STOPPED. */
  logLines: string[];
  /** RunTask answers with these failures and no task. */
  failures?: { arn?: string; reason: string; detail?: string }[];
  /** Tasks ListTasks reports RUNNING. */
  alreadyRunning?: string[];
}

export interface AwsRequest {
  target: string;
  body: Record<string, any>;
  authorization: string | undefined;
}

export interface AwsStandIn {
  url: string;
  requests: AwsRequest[];
  script: TaskScript;
  close(): Promise<void>;
}

interface TaskState {
  arn: string;
  cluster: string;
  taskDefinitionArn: string;
  describes: number;
  logGroup: string;
  stream: string | undefined;
  events: { timestamp: number; message: string }[];
}

export async function startAwsStandIn(options: {
  account: string;
  region: string;
  logGroup: string;
  streamPrefix: string;
  container: string;
}): Promise<AwsStandIn> {
  const requests: AwsRequest[] = [];
  const tasks = new Map<string, TaskState>();
  let seq = 0;
  const standIn: AwsStandIn = {
    url: "",
    requests,
    script: { runningPolls: 1, exitCode: 0, logLines: [] },
    close: async () => {},
  };

  const error = (type: string, message: string) => ({ status: 400, body: { __type: type, message } });
  const taskView = (t: TaskState) => {
    const s = standIn.script;
    const stopped = t.describes > s.runningPolls + 1;
    const status = t.describes === 0 ? "PROVISIONING" : stopped ? "STOPPED" : "RUNNING";
    return {
      taskArn: t.arn,
      clusterArn: t.cluster,
      taskDefinitionArn: t.taskDefinitionArn,
      lastStatus: status,
      desiredStatus: stopped ? "STOPPED" : "RUNNING",
      ...(stopped
        ? {
            stopCode: s.stopCode ?? (s.exitCode === undefined ? "TaskFailedToStart" : "EssentialContainerExited"),
            stoppedReason: s.stoppedReason ?? "Essential container in task exited",
          }
        : {}),
      containers: [
        {
          name: options.container,
          lastStatus: status,
          ...(stopped && s.exitCode !== undefined ? { exitCode: s.exitCode } : {}),
        },
      ],
    };
  };
  const advance = (t: TaskState) => {
    t.describes++;
    const view = taskView(t);
    const lines = standIn.script.logLines;
    const half = Math.ceil(lines.length / 2);
    if (view.lastStatus !== "PROVISIONING" && !t.stream)
      t.stream = `${options.streamPrefix}/${options.container}/${t.arn.split("/").pop()}`;
    const upTo = view.lastStatus === "STOPPED" ? lines.length : view.lastStatus === "RUNNING" ? half : 0;
    while (t.events.length < upTo) t.events.push({ timestamp: Date.now(), message: lines[t.events.length] });
    return view;
  };

  const handlers: Record<string, (body: Record<string, any>) => { status: number; body: unknown }> = {
    "AmazonEC2ContainerServiceV20141113.ListTasks": (b) => ({
      status: 200,
      body: { taskArns: b.desiredStatus === "RUNNING" ? (standIn.script.alreadyRunning ?? []) : [] },
    }),
    "AmazonEC2ContainerServiceV20141113.RunTask": (b) => {
      if (standIn.script.failures) return { status: 200, body: { tasks: [], failures: standIn.script.failures } };
      if (!String(b.cluster).startsWith("arn:aws:ecs:")) return error("ClusterNotFoundException", "Cluster not found.");
      const clusterName = String(b.cluster).split("/").pop();
      const arn = `arn:aws:ecs:${options.region}:${options.account}:task/${clusterName}/${(++seq).toString(16).padStart(32, "0")}`;
      const t: TaskState = {
        arn,
        cluster: b.cluster,
        taskDefinitionArn: b.taskDefinition,
        describes: 0,
        logGroup: options.logGroup,
        stream: undefined,
        events: [],
      };
      tasks.set(arn, t);
      return { status: 200, body: { tasks: [taskView(t)], failures: [] } };
    },
    "AmazonEC2ContainerServiceV20141113.DescribeTasks": (b) => {
      const found = (b.tasks as string[]).map((arn) => tasks.get(arn)).filter((t): t is TaskState => t !== undefined);
      return {
        status: 200,
        body: {
          tasks: found.map(advance),
          failures: (b.tasks as string[]).filter((a) => !tasks.has(a)).map((arn) => ({ arn, reason: "MISSING" })),
        },
      };
    },
    "Logs_20140328.GetLogEvents": (b) => {
      const t = [...tasks.values()].find((x) => x.stream === b.logStreamName && x.logGroup === b.logGroupName);
      if (!t) return error("ResourceNotFoundException", "The specified log stream does not exist.");
      const from = typeof b.nextToken === "string" ? Number(b.nextToken.slice(2)) : 0;
      const page = t.events.slice(from, from + 2);
      const next = from + page.length;
      return {
        status: 200,
        body: {
          events: page.map((e) => ({ ...e, ingestionTime: e.timestamp })),
          nextForwardToken: `f/${String(next).padStart(8, "0")}`,
          nextBackwardToken: `b/${String(from).padStart(8, "0")}`,
        },
      };
    },
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const target = String(req.headers["x-amz-target"] ?? "");
      let body: Record<string, any> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
      } catch {
        // answered below as a bad request
      }
      requests.push({ target, body, authorization: req.headers.authorization });
      const handler = handlers[target];
      const answer =
        req.method !== "POST" || req.headers["content-type"] !== "application/x-amz-json-1.1"
          ? error("SerializationException", "expected an awsJson1_1 POST")
          : handler
            ? handler(body)
            : error("UnknownOperationException", target);
      const text = JSON.stringify(answer.body);
      res.writeHead(answer.status, {
        "content-type": "application/x-amz-json-1.1",
        "x-amzn-requestid": `req-${requests.length}`,
        "content-length": Buffer.byteLength(text),
      });
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  standIn.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  standIn.close = () => new Promise((resolve) => server.close(() => resolve()));
  return standIn;
}
