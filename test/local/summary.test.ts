import { describe, expect, it } from "vitest";
import { runStatus } from "../../local/summary";

describe("the local summary's run status", () => {
  it.each([
    ["a finished run: its intake job's status", { exitCode: 0, signal: null, finalEvent: "run.done" }, { status: "ExecutionCompleted" }, "ExecutionCompleted"],
    ["a finished run with failed messages (no HUB_INTAKE_JOB row)", { exitCode: 3, signal: null, finalEvent: "run.done" }, null, "ExecutionFailed"],
    ["a stopped run: resumable, not ExecutionFailed", { exitCode: 1, signal: null, finalEvent: "run.stopped" }, null, "Stopped (resumable: the next run resumes the transaction)"],
    ["a killed run: resumable", { exitCode: 1, signal: "SIGKILL" as const, finalEvent: "progress" }, null, "Stopped (killed by SIGKILL; resumable: the next run resumes the transaction)"],
    ["a refused run", { exitCode: 1, signal: null, finalEvent: "run.refused" }, null, "Refused (nothing was touched; fix the problem and run again)"],
    ["a crash without the final line", { exitCode: 70, signal: null, finalEvent: "run.open" }, null, "Stopped (task exit code 70 without its final log line; resumable: the next run resumes the transaction)"],
  ])("%s", (_, run, job, expected) => {
    const status = runStatus(run, job);
    expect(status).toBe(expected);
    if (run.finalEvent !== "run.done") expect(status).not.toMatch(/ExecutionFailed/);
  });
});
