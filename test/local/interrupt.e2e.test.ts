/**
 * Ctrl-C on `npm start` mid-publish: SIGINT to the process group of `local`. The task is passed the signal once and
 * stops cleanly, then the emulator and PostgreSQL stop; the summary says "Stopped (SIGINT): resumable" with the
 * transaction and the counts so far, and `local` exits 130. The next start completes the resumed run. A second Ctrl-C
 * exits at once, still stopping PostgreSQL. SIGTERM to `npm start` alone (npm and its shell end, local is re-parented)
 * stops it the same way.
 */
import { afterAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn } from "node:child_process";
import { BIN, PROJECT_ROOT, runCli } from "../support/cli";
import { sleep } from "../support/database";
import { runningServer } from "../../local/postgres/running";
import { fixtureStackFile } from "../fixtures/stacks";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-interrupt-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** One publish batch in flight at a time, each answered slowly: a run that is mid-publish for a while. */
const SLOW = { HUB_EXPORT_PUBLISH_CONCURRENCY: "1", HUB_EXPORT_CHUNK_SIZE: "100" };

/** The JSON log lines so far of the latest task run of the state folder `root` (its log file under logs/). */
function taskEvents(root: string): Record<string, unknown>[] {
  const logs = path.join(root, "logs");
  const file = fs.existsSync(logs)
    ? fs
        .readdirSync(logs)
        .filter((f) => f.startsWith("task-"))
        .sort()
        .at(-1)
    : undefined;
  if (!file) return [];
  return fs
    .readFileSync(path.join(logs, file), "utf8")
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return []; // a line being written
      }
    });
}

/** The processes whose command line names `folder` (Linux's /proc): what a start left running. */
function processesNaming(folder: string): string[] {
  return fs.readdirSync("/proc").flatMap((pid) => {
    if (!/^\d+$/.test(pid)) return [];
    try {
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
      return cmdline.includes(folder) ? [`${pid}: ${cmdline}`] : [];
    } catch {
      return []; // ended meanwhile
    }
  });
}

/** `local` in a process group of its own, as a terminal runs it; its output, exit, and its task's log lines. */
function startLocal(root: string, args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, [BIN, "local", "--file", fixtureStackFile("qa"), "--dir", root, ...args], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  const events = () => taskEvents(root);
  const until = async (what: () => boolean) => {
    let ended = false;
    void exited.then(() => (ended = true));
    while (!what()) {
      if (ended) throw new Error(`local ended first: ${stderr}`);
      await sleep(50);
    }
  };
  return { child, exited, events, until, output: () => ({ stdout, stderr }) };
}

describe("hub-export local interrupted", () => {
  it("Ctrl-C mid-publish: the task stops cleanly, then PostgreSQL; the summary says so; the next start completes the resumed run", async () => {
    const local = startLocal(dir, ["--employees", "600", "--hub-faults", "queue.publish:latency=300"], SLOW);
    // Extracted, and published in part: entities of published messages reached ERS.
    await local.until(
      () =>
        local.events().some((e) => e.event === "extract.done") &&
        local.events().some((e) => e.event === "progress" && e.phase === "ers" && Number(e.done) > 0),
    );
    process.kill(-local.child.pid!, "SIGINT");
    expect(await local.exited).toBe(130);
    const { stdout, stderr } = local.output();
    expect(stderr).toMatch(
      /» SIGINT: the export task stops cleanly \(within its grace period of \d+ s\), then the emulator and PostgreSQL; Ctrl-C again exits at once\n/,
    );
    expect(stderr).not.toMatch(/internal error|Unhandled|at .*\.js:\d+/);
    const events = local.events();
    const opened = events.find((e) => e.event === "run.open")!;
    expect(events.at(-1)).toMatchObject({
      event: "run.stopped",
      reason: "SIGINT",
      phase: "PUBLISH",
      transactionId: opened.transactionId,
    });
    expect(stdout).toContain(`Transaction id   ${String(opened.transactionId)}\n`);
    expect(stdout).toContain(
      "Status           Stopped (SIGINT): resumable (the next start resumes the transaction) (task exit code 1)\n",
    );
    expect(stdout).toContain("Reason           SIGINT\n");
    const published = Number(
      /^ {2}publish +([\d,]+) published \(the next run publishes the rest\)$/m.exec(stdout)?.[1].replace(/,/g, ""),
    );
    expect(stdout).toMatch(
      /Counts per phase \(this run, so far: it stopped before the end\)\n {2}extract +[\d,]+ employees in [\d,]+ messages\n/,
    );
    expect(published).toBeGreaterThan(0);
    // PostgreSQL was stopped, after the task: nobody runs on the data folder.
    expect(runningServer(path.join(dir, "postgres"))).toBeUndefined();

    const next = await runCli(["local", "--file", fixtureStackFile("qa"), "--json", "--dir", dir], {
      timeoutMs: 240_000,
    });
    expect(next.code, next.stderr).toBe(0);
    const summary = JSON.parse(next.stdout);
    expect(summary).toMatchObject({
      status: "ExecutionCompleted",
      transactionId: opened.transactionId,
      interrupted: null,
      // Its counts are the transaction's, the interrupted start's included.
      resumed: true,
    });
    // The resumed transaction, complete: every message it extracted is published, none failed.
    const counts = summary.intakeJob.counts;
    expect(counts.published).toBe(counts.messages);
    expect(counts.published).toBeGreaterThan(published);
    expect(counts).toMatchObject({ failed: 0, heldBack: 0 });
  });

  it("SIGTERM to `npm start` alone: local finds its parent gone and stops in order, as on its own SIGTERM", async () => {
    const root = path.join(dir, "npm");
    // npm runs the script through a shell; SIGTERM to npm ends npm and that shell, and local is re-parented.
    const npm = spawn(
      "npm",
      [
        "start",
        "--",
        "--file",
        fixtureStackFile("qa"),
        "--dir",
        root,
        "--employees",
        "600",
        "--hub-faults",
        "queue.publish:latency=300",
      ],
      { cwd: PROJECT_ROOT, env: { ...process.env, ...SLOW }, stdio: ["ignore", "pipe", "pipe"], detached: true },
    );
    let stdout = "";
    let stderr = "";
    npm.stdout.on("data", (d) => (stdout += d));
    npm.stderr.on("data", (d) => (stderr += d));
    // Closed once every process that writes them (npm, and local after it) has ended.
    const closed = new Promise<void>((resolve) => npm.on("close", () => resolve()));
    const npmExited = new Promise<number | null>((resolve) => npm.on("exit", (code) => resolve(code)));
    const events = () => taskEvents(root);
    let ended = false;
    void closed.then(() => (ended = true));
    while (!events().some((e) => e.event === "progress" && e.phase === "publish" && Number(e.done) > 0)) {
      if (ended) throw new Error(`npm start ended first: ${stderr}`);
      await sleep(50);
    }
    process.kill(npm.pid!, "SIGTERM");
    expect(await npmExited).not.toBe(0);
    await closed;
    expect(stderr).toContain(
      "» the process that started this one has ended (npm start signalled alone?): stopping as on SIGTERM\n",
    );
    expect(stderr).toMatch(/» SIGTERM: the export task stops cleanly \(within its grace period of \d+ s\)/);
    expect(events().at(-1)).toMatchObject({ event: "run.stopped", reason: "SIGTERM", phase: "PUBLISH" });
    expect(stdout).toContain(
      "Status           Stopped (SIGTERM): resumable (the next start resumes the transaction) (task exit code 1)\n",
    );
    // PostgreSQL stopped, and nothing of this start is left running (local, the task, the server name the folder).
    expect(runningServer(path.join(root, "postgres"))).toBeUndefined();
    expect(processesNaming(root)).toEqual([]);
  });

  it("a second Ctrl-C exits at once, still stopping PostgreSQL", async () => {
    const root = path.join(dir, "second");
    // A silent broker and a long grace period: only the second Ctrl-C ends this stop soon.
    const local = startLocal(root, ["--employees", "300", "--hub-faults", "queue.publish:silence=1"], {
      ...SLOW,
      HUB_EXPORT_STOP_GRACE_SECONDS: "600",
    });
    // After the extraction: a stop during it ends at the next chunk, before the second Ctrl-C could land.
    await local.until(() => local.events().some((e) => e.event === "extract.done"));
    process.kill(-local.child.pid!, "SIGINT");
    await local.until(() => local.events().some((e) => e.event === "run.stopping"));
    process.kill(-local.child.pid!, "SIGINT");
    expect(await local.exited).toBe(130);
    const { stderr } = local.output();
    expect(stderr).toContain("» SIGINT again: exiting at once; stopping PostgreSQL\n");
    expect(stderr).not.toMatch(/internal error|Unhandled/);
    expect(local.events().at(-1)).toMatchObject({ event: "run.stopped", reason: "SIGINT, then SIGINT again" });
    expect(runningServer(path.join(root, "postgres"))).toBeUndefined();
  });
});
