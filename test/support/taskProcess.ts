/**
 * The bundled export task, built once per test run and run with node, exactly as the image runs it: on the image's
 * Node.js (task/Dockerfile's version, from the pinned node-<platform>-<arch> package), not the one running the tests.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { inject } from "vitest";

/** The node executable the bundle runs on in tests: the image's Node.js (scripts/image-node.js). */

export const TASK_NODE: string = (
  require("../../scripts/image-node.js") as { imageNodeBinary(): string }
).imageNodeBinary();

/** The path of dist/task/index.js, built once per `npm test` run (test/support/globalSetup.ts). */
export function taskBundle(): Promise<string> {
  return Promise.resolve(inject("taskBundle"));
}

export interface TaskResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** stdout's JSON lines. */
  events: Record<string, unknown>[];
}

export interface StartedTask {
  child: ChildProcess;
  done: Promise<TaskResult>;
  /** The JSON log lines so far. */
  events: Record<string, unknown>[];
  /** Resolves when a log line matches (or the task ends). */
  waitFor(match: (event: Record<string, unknown>) => boolean): Promise<boolean>;
}

export async function startTask(args: string[], env: Record<string, string> = {}): Promise<StartedTask> {
  const file = await taskBundle();
  const child = spawn(TASK_NODE, [file, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const events: Record<string, unknown>[] = [];
  const watchers: { match: (e: Record<string, unknown>) => boolean; resolve: (v: boolean) => void }[] = [];
  let partial = "";
  child.stdout.on("data", (chunk: Buffer) => {
    const text = chunk.toString("utf8");
    stdout += text;
    partial += text;
    let nl: number;
    while ((nl = partial.indexOf("\n")) >= 0) {
      const line = partial.slice(0, nl);
      partial = partial.slice(nl + 1);
      try {
        const event = JSON.parse(line) as Record<string, unknown>;
        events.push(event);
        for (const w of [...watchers]) {
          if (w.match(event)) {
            watchers.splice(watchers.indexOf(w), 1);
            w.resolve(true);
          }
        }
      } catch {
        // not a JSON line
      }
    }
  });
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const done = new Promise<TaskResult>((resolve) => {
    child.on("close", (code, signal) => {
      for (const w of watchers.splice(0)) w.resolve(false);
      resolve({ code, signal, stdout, stderr, events });
    });
  });
  return {
    child,
    done,
    events,
    waitFor(match) {
      if (events.some(match)) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => watchers.push({ match, resolve }));
    },
  };
}

/** The events a run that was not killed always ends its log with (run.done, run.stopped, run.refused). */
export const FINAL_EVENTS = ["run.done", "run.stopped", "run.refused"];

/** The last log event's name: a run that ended by itself must end with one of FINAL_EVENTS. */
export function finalEvent(result: TaskResult): string | undefined {
  return result.events.at(-1)?.event as string | undefined;
}

/** The transaction id of the run's `run.open` event. */
export function openedTransaction(result: TaskResult): string {
  const opened = result.events.find((e) => e.event === "run.open");
  if (!opened)
    throw new Error(`the run logged no run.open event (its last: ${JSON.stringify(result.events.at(-1)?.event)})`);
  return opened.transactionId as string;
}

export async function runTask(args: string[], env: Record<string, string> = {}): Promise<TaskResult> {
  return (await startTask(args, env)).done;
}

/** Runs the task, killing it after `ms`: a run that hangs ends with signal SIGKILL instead of an exit code. */
export async function runTaskWithin(args: string[], env: Record<string, string>, ms: number): Promise<TaskResult> {
  const task = await startTask(args, env);
  const timer = setTimeout(() => task.child.kill("SIGKILL"), ms);
  try {
    return await task.done;
  } finally {
    clearTimeout(timer);
  }
}
