/** The export task as the container runs it: the esbuild bundle, started with `node` in a child process. */
import fs from "node:fs";
import path from "node:path";
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { PROJECT_ROOT } from "../config/load";
import { UserError } from "../core/errors";
import { systemRefusal } from "../core/refusals";
import { finished } from "node:stream/promises";
import type { PhaseUpdate, ProgressDisplay } from "./progress";
import { isEmfRecord, type EmfRecord } from "../core/metrics";

export const TASK_BUNDLE = path.join(PROJECT_ROOT, "dist", "task", "index.js");
const BUILD_SCRIPT = path.join(PROJECT_ROOT, "scripts", "build-task.js");
/** The bundle is stale when any of these changed after it was built. */
const SOURCE_DIRS = ["task", "core", "config", "cls", "cli"].map((d) => path.join(PROJECT_ROOT, d));

function newestMtime(dir: string): number {
  let newest = 0;
  for (const file of fs.readdirSync(dir, { recursive: true, encoding: "utf8" }))
    newest = Math.max(newest, fs.statSync(path.join(dir, file)).mtimeMs);
  return newest;
}

/** Builds the bundle when it is missing or older than its sources. */
export async function ensureTaskBundle(): Promise<string> {
  const built = fs.existsSync(TASK_BUNDLE) ? fs.statSync(TASK_BUNDLE).mtimeMs : 0;
  if (built > Math.max(...SOURCE_DIRS.map(newestMtime))) return TASK_BUNDLE;
  const result = await runNode([BUILD_SCRIPT], () => {});
  // A source that does not compile (an edit), or a full disk: the build's own words say which.
  if (result.code !== 0)
    throw new UserError([
      `building the task bundle (${path.relative(PROJECT_ROOT, TASK_BUNDLE)}) failed (exit ${result.code}): fix what the build says below, then start again`,
      result.output.trimEnd(),
    ]);
  return TASK_BUNDLE;
}

export interface TaskRunResult {
  exitCode: number;
  /** The signal that ended the task (it was killed), if any. */
  signal: NodeJS.Signals | null;
  transactionId: string | null;
  /** The task's own last error line, when it failed. */
  error: string | null;
  /** Its CloudWatch metrics: the embedded-metric-format lines of its log. */
  metrics: EmfRecord[];
  /** The event of its last log line: run.done, run.stopped or run.refused when it ended by itself. */
  finalEvent: string | null;
  /** Why it did not complete, as its last event says: the refusal's problems, the stop's reason. */
  reason: string | null;
  /** The signal it was passed to stop it (Ctrl-C on `npm start`), if any. */
  interrupted: NodeJS.Signals | null;
  /** It resumed a transaction an earlier start had begun (run.open): its counts are the transaction's, all starts. */
  resumed: boolean;
  /** Messages the hub acknowledged that it could not record as published (publish.unrecorded): sent again next. */
  unrecorded: string[];
}

/** Runs the bundle; every output line goes to `logFile`, JSON log lines also drive the progress display. */
export async function runTaskBundle(options: {
  bundle: string;
  args: string[];
  logFile: string;
  progress: ProgressDisplay;
  env?: NodeJS.ProcessEnv;
  /** Ctrl-C and SIGTERM: passed on to the task (local/interrupt.ts). */
  interrupts?: { running(task: ChildProcess): void; readonly taskSignal: NodeJS.Signals | null };
}): Promise<TaskRunResult> {
  const log = fs.createWriteStream(options.logFile, { mode: 0o600 });
  // A log that cannot be written (a full disk) does not stop the run: the progress display says so once.
  let logFailed = false;
  log.on("error", (err: NodeJS.ErrnoException) => {
    if (logFailed) return;
    logFailed = true;
    err.path ??= options.logFile;
    options.progress.step(`the task log is incomplete: ${systemRefusal(err) ?? err.message}`);
  });
  let transactionId: string | null = null;
  let error: string | null = null;
  const metrics: EmfRecord[] = [];
  let finalEvent: string | null = null;
  let reason: string | null = null;
  let resumed = false;
  let unrecorded: string[] = [];
  const lastDone = new Map<string, PhaseUpdate>();
  const result = await runNode(
    [options.bundle, ...options.args],
    (line) => {
      log.write(line + "\n");
      const event = parseLogLine(line);
      if (!event) {
        if (line.trim()) error = line.trim();
        return;
      }
      if (typeof event.transactionId === "string") transactionId = event.transactionId;
      if (isEmfRecord(event)) metrics.push(event);
      else if (typeof event.event === "string") {
        finalEvent = event.event;
        if (event.event === "run.open") resumed = event.resumed === true;
        if (event.event === "publish.unrecorded" && Array.isArray(event.messageIds))
          unrecorded = event.messageIds.map(String);
        if (event.event === "run.refused" && Array.isArray(event.problems))
          reason = event.problems.map(String).join("\n");
        if (event.event === "run.stopped" && typeof event.reason === "string") reason = event.reason;
      }
      if ((event.level === "error" || event.level === "fatal") && typeof event.msg === "string") error = event.msg;
      const update = progressOf(event, lastDone);
      if (update) {
        lastDone.set(update.phase, update);
        options.progress.update(update);
      }
    },
    options.env,
    (child) => options.interrupts?.running(child),
  );
  await finished(log.end()).catch(() => {});
  return {
    exitCode: result.code ?? 1,
    signal: result.signal,
    transactionId,
    error,
    finalEvent,
    reason,
    metrics,
    interrupted: options.interrupts?.taskSignal ?? null,
    resumed,
    unrecorded,
  };
}

type LogEvent = Record<string, unknown>;

function parseLogLine(line: string): LogEvent | null {
  if (!line.startsWith("{")) return null;
  try {
    return JSON.parse(line) as LogEvent;
  } catch {
    return null;
  }
}

/**
 * The task's `progress` events ({phase, done}) as display updates; its `<phase>.done` events finish the phase with
 * the total they carry (the summary's figure), else the last count seen. A phase's count never goes backwards: ERS
 * entities are counted while publishing, then by a second counter for what was left (usually nothing).
 */
export function progressOf(event: LogEvent, lastDone: ReadonlyMap<string, PhaseUpdate>): PhaseUpdate | null {
  if (event.event === "progress" && typeof event.phase === "string" && typeof event.done === "number") {
    const last = lastDone.get(event.phase);
    if (last && event.done < last.done) return null;
    return {
      phase: event.phase,
      done: event.done,
      unit: UNITS[event.phase],
      seconds: typeof event.seconds === "number" ? event.seconds : undefined,
    };
  }
  const ended = typeof event.event === "string" ? /^(\w+)\.done$/.exec(event.event)?.[1] : undefined;
  if (ended && ended !== "run") {
    const last = lastDone.get(ended);
    const total = DONE_TOTALS[ended]?.(event);
    return {
      phase: ended,
      done: typeof total === "number" && !Number.isNaN(total) ? total : (last?.done ?? 0),
      unit: UNITS[ended],
      seconds: last?.seconds,
      finished: true,
    };
  }
  return null;
}

const UNITS: Record<string, string> = { extract: "employees", publish: "messages", ers: "entities" };
/** The count each `<phase>.done` event carries, in the phase's unit. */
const DONE_TOTALS: Record<string, (event: LogEvent) => number | undefined> = {
  extract: (e) => e.employees as number | undefined,
  publish: (e) =>
    typeof e.published === "number" && typeof e.failed === "number" ? e.published + e.failed : undefined,
  ers: (e) => e.entities as number | undefined,
};

/**
 * Runs node in a process group of its own: a Ctrl-C in the terminal reaches only `local`, which passes it on to the
 * task once (local/interrupt.ts), and lets a bundle build finish.
 */
function runNode(
  args: string[],
  onLine: (line: string) => void,
  env?: NodeJS.ProcessEnv,
  onSpawn?: (child: ChildProcess) => void,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: PROJECT_ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    onSpawn?.(child);
    let output = "";
    for (const input of [child.stdout, child.stderr]) {
      createInterface({ input, crlfDelay: Infinity }).on("line", (line) => {
        if (output.length < 64_000) output += line + "\n";
        onLine(line);
      });
    }
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, output }));
  });
}
