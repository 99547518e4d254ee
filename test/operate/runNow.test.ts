/**
 * `hub-export run-now` as an operator runs it (the CLI in a child process), with the real AWS SDK clients pointed at
 * a loopback stand-in for ECS and CloudWatch Logs through the SDK's endpoint override (AWS_ENDPOINT_URL).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Writable } from "node:stream";
import { runMain } from "../support/cli";
import { executeCommand } from "../../cli/command";
import runNowCommand from "../../cli/commands/runNow";
import { startAwsStandIn, type AwsStandIn } from "../support/awsStandIn";

const ACCOUNT = "123456789012";
const REGION = "eu-west-1";
const RUN_TASK = {
  region: REGION,
  cluster: `arn:aws:ecs:${REGION}:${ACCOUNT}:cluster/hub-export-acme-qa`,
  taskDefinition: `arn:aws:ecs:${REGION}:${ACCOUNT}:task-definition/hub-export-acme-qa:7`,
  containerName: "hub-export",
  subnetIds: ["subnet-0a1b2c3d4e5f60718", "subnet-0f1e2d3c4b5a69788"],
  securityGroupIds: ["sg-0123456789abcdef0"],
  assignPublicIp: false,
  logGroup: "/ecs/hub-export-acme-qa",
  logStreamPrefix: "export",
};

describe("hub-export run-now", () => {
  let aws: AwsStandIn;
  let dir: string;
  let outputsFile: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    aws = await startAwsStandIn({
      account: ACCOUNT,
      region: REGION,
      logGroup: RUN_TASK.logGroup,
      streamPrefix: "export",
      container: "hub-export",
    });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-run-now-"));
    outputsFile = path.join(dir, "outputs.json");
    // What `pulumi stack output --json` prints: other outputs around runTask.
    fs.writeFileSync(
      outputsFile,
      JSON.stringify({ jobName: "HRSYS_EMPL_HUB_ACME_202611_QA", cluster: RUN_TASK.cluster, runTask: RUN_TASK }),
    );
    env = {
      AWS_ENDPOINT_URL: aws.url,
      AWS_ACCESS_KEY_ID: "AKIDSTANDIN",
      AWS_SECRET_ACCESS_KEY: "stand-in-secret",
      AWS_REGION: "us-west-2",
      AWS_PROFILE: "",
      AWS_CONFIG_FILE: path.join(dir, "none"),
      AWS_SHARED_CREDENTIALS_FILE: path.join(dir, "none"),
    };
  });
  afterAll(async () => {
    await aws?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    aws.requests.length = 0;
  });

  it("starts the task as the schedule does and prints its ARN and log stream", async () => {
    aws.script = { runningPolls: 1, exitCode: 0, logLines: [] };
    const r = await runMain(["run-now", "--outputs", outputsFile], { env });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const run = aws.requests.find((q) => q.target.endsWith(".RunTask"))!;
    expect(run.body).toEqual({
      // The SDK's idempotency token: a retried call starts no second task.
      clientToken: expect.stringMatching(/^[0-9a-f-]{36}$/),
      cluster: RUN_TASK.cluster,
      taskDefinition: RUN_TASK.taskDefinition,
      launchType: "FARGATE",
      platformVersion: "LATEST",
      count: 1,
      startedBy: expect.stringMatching(/^hub-export\/run-now\/[A-Za-z0-9_-]+$/),
      networkConfiguration: {
        awsvpcConfiguration: {
          subnets: RUN_TASK.subnetIds,
          securityGroups: RUN_TASK.securityGroupIds,
          assignPublicIp: "DISABLED",
        },
      },
    });
    // Signed requests (SigV4) in the stack's region, whatever AWS_REGION says.
    expect(run.authorization).toMatch(
      new RegExp(`^AWS4-HMAC-SHA256 Credential=AKIDSTANDIN/\\d{8}/${REGION}/ecs/aws4_request`),
    );
    const arn = /task {8}(\S+)/.exec(r.stdout)![1];
    expect(arn).toMatch(/^arn:aws:ecs:eu-west-1:123456789012:task\/hub-export-acme-qa\/[0-9a-f]{32}$/);
    expect(r.stdout).toContain(
      `log group   /ecs/hub-export-acme-qa\nlog stream  export/hub-export/${arn.split("/").pop()}\n`,
    );
    expect(aws.requests.map((q) => q.target.split(".").pop())).toEqual(["ListTasks", "RunTask"]);
  });

  it("--wait follows the log to the end and exits with the task's exit code", async () => {
    const lines = [1, 2, 3, 4, 5].map((i) => JSON.stringify({ level: "info", event: `step.${i}`, msg: `line ${i}` }));
    aws.script = { runningPolls: 2, exitCode: 3, logLines: lines };
    const r = await runMain(["run-now", "--outputs", outputsFile, "--wait", "--poll", "0.05"], { env });
    expect(r.code).toBe(3);
    // Every line once, in order, though they arrived over several polls and pages.
    expect(r.stdout.split("\n").filter((l) => l.startsWith("{"))).toEqual(lines);
    expect(r.stderr).toContain("task running\n");
    expect(r.stderr).toContain("task stopped\n");
    expect(r.stderr).toContain("exit code 3: ExecutionFailed");
    const logs = aws.requests.filter((q) => q.target === "Logs_20140328.GetLogEvents");
    expect(logs.length).toBeGreaterThan(2);
    expect(logs[0].body).toMatchObject({ logGroupName: RUN_TASK.logGroup, startFromHead: true });
    expect(logs[0].authorization).toContain(`/${REGION}/logs/aws4_request`);
  });

  it("--wait on a task that never ran says why and exits 1", async () => {
    aws.script = {
      runningPolls: 0,
      exitCode: undefined,
      stoppedReason: "CannotPullContainerError: pull image manifest has been retried 5 time(s)",
      logLines: [],
    };
    const r = await runMain(["run-now", "--outputs", outputsFile, "--wait", "--poll", "0.05"], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("the task stopped without an exit code: TaskFailedToStart: CannotPullContainerError");
  });

  it("--wait on a task ECS stopped with SIGTERM reports it as stopped, with the stop code, not as a failure", async () => {
    aws.script = {
      runningPolls: 1,
      exitCode: 1,
      stopCode: "UserInitiated",
      stoppedReason: "Task stopped by \u001b[31moperator",
      logLines: ['{"event":"run.stopped","reason":"SIGTERM"}'],
    };
    const r = await runMain(["run-now", "--outputs", outputsFile, "--wait", "--poll", "0.05"], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "exit code 1: stopped by ECS (UserInitiated: Task stopped by \\x1b[31moperator); refused before touching any data, or stopped mid-way (the next run resumes its transaction)",
    );
    // Stopped by SIGTERM while still starting: no run began, nothing to resume.
    aws.script = { runningPolls: 1, exitCode: 143, stopCode: "SpotInterruption", logLines: [] };
    const early = await runMain(["run-now", "--outputs", outputsFile, "--wait", "--poll", "0.05"], { env });
    expect(early.code).toBe(143);
    expect(early.stderr).toContain(
      "exit code 143: stopped by ECS (SpotInterruption: Essential container in task exited); stopped by SIGTERM while starting, before the run began",
    );
  });

  it("--timeout stops following (exit 124) and leaves the task running", async () => {
    aws.script = { runningPolls: 1000, exitCode: 0, logLines: ["{}"] };
    const r = await runMain(["run-now", "--outputs", outputsFile, "--wait", "--poll", "0.05", "--timeout", "0.3"], {
      env,
    });
    expect(r.code).toBe(124);
    expect(r.stderr).toMatch(/stopped following after the timeout; the task keeps running: arn:aws:ecs:/);
  });

  it("refuses while a run is already running, and reports ECS's failures in one line each", async () => {
    aws.script = {
      runningPolls: 1,
      exitCode: 0,
      logLines: [],
      alreadyRunning: [`arn:aws:ecs:${REGION}:${ACCOUNT}:task/hub-export-acme-qa/abc`],
    };
    const busy = await runMain(["run-now", "--outputs", outputsFile], { env });
    expect(busy.code).toBe(1);
    expect(busy.stderr).toBe(
      `a run of hub-export-acme-qa is already running: arn:aws:ecs:${REGION}:${ACCOUNT}:task/hub-export-acme-qa/abc\na second one would be refused by the client's run lock; wait for it to end\n`,
    );
    expect(aws.requests.some((q) => q.target.endsWith(".RunTask"))).toBe(false);

    aws.script = {
      runningPolls: 1,
      exitCode: 0,
      logLines: [],
      failures: [{ arn: RUN_TASK.taskDefinition, reason: "MISSING" }],
    };
    const failed = await runMain(["run-now", "--outputs", outputsFile], { env });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toBe(`ECS did not start the task\n${RUN_TASK.taskDefinition}: MISSING\n`);
  });

  it("an AWS error is one line, no stack trace", async () => {
    aws.script = { runningPolls: 1, exitCode: 0, logLines: [] };
    const file = path.join(dir, "bad-cluster.json");
    fs.writeFileSync(file, JSON.stringify({ runTask: { ...RUN_TASK, cluster: "arn:aws-cn:nope" } }));
    const r = await runMain(["run-now", "--outputs", file], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("AWS: ClusterNotFoundException: Cluster not found.\n");
  });

  // In-process (the CLI's own command runner): bad input is refused before any AWS call.
  it.each<[string, string[], (dir: string) => void, RegExp, number]>([
    ["neither --stack nor --outputs", [], () => {}, /give --stack NAME or --outputs FILE/, 2],
    ["both", ["--stack", "qa", "--outputs", "x.json"], () => {}, /give --stack or --outputs, not both/, 2],
    [
      "a missing file",
      ["--outputs", "/nonexistent/outputs.json"],
      () => {},
      /^--outputs \/nonexistent\/outputs.json: cannot read it \(ENOENT\)\n$/,
      1,
    ],
    [
      "outputs without runTask",
      ["--outputs", "old.json"],
      (d) => fs.writeFileSync(path.join(d, "old.json"), JSON.stringify({ cluster: "x" })),
      /no stack output 'runTask': run 'pulumi up' with this version/,
      1,
    ],
    [
      "a runTask without subnets",
      ["--outputs", "nosubnet.json"],
      (d) =>
        fs.writeFileSync(path.join(d, "nosubnet.json"), JSON.stringify({ runTask: { ...RUN_TASK, subnetIds: [] } })),
      /stack output runTask\.subnetIds: /,
      1,
    ],
    [
      "--stack without the Pulumi CLI",
      ["--stack", "qa"],
      () => {},
      /--stack qa: the Pulumi CLI is not installed here; give --outputs FILE/,
      1,
    ],
    [
      "a bad --poll",
      ["--outputs", "x.json", "--poll", "soon"],
      () => {},
      /--poll must be a positive number of seconds/,
      2,
    ],
  ])("rejects %s with a clear message", async (_what, args, setup, message, code) => {
    setup(dir);
    const absolute = args.map((a, i) => (args[i - 1] === "--outputs" && !path.isAbsolute(a) ? path.join(dir, a) : a));
    let stderr = "";
    const sink = (into: (t: string) => void) =>
      new Writable({ write: (chunk, _enc, done) => (into(String(chunk)), done()) });
    const savedPath = process.env.PATH;
    process.env.PATH = path.join(dir, "no-bin");
    try {
      const result = await executeCommand("run-now", runNowCommand, absolute, {
        stdout: sink(() => {}),
        stderr: sink((t) => (stderr += t)),
        stdin: process.stdin,
      });
      expect(stderr).toMatch(message);
      expect(stderr).not.toMatch(/\n\s+at /);
      expect(result).toBe(code);
    } finally {
      process.env.PATH = savedPath;
    }
  });
});
