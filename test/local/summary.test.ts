import { describe, expect, it } from "vitest";
import { changeLookup, runStatus } from "../../local/summary";

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

describe("the local summary's change lookup", () => {
  const lookup = { mode: "incremental" as const, since: "2026-11-01T00:00:00.000000", changedRows: 1234, seconds: 0.02, chunks: 2 };

  it("says the changes were found through the changed_at indexes", () => {
    expect(changeLookup({ ...lookup, missingIndexes: [] })).toBe("incremental mode: 1,234 changed rows found in 0.02 s, 2 chunk statement(s) (through the changed_at indexes)");
  });

  it("without them, names the tables scanned, the time it took and where the DDL is", () => {
    expect(changeLookup({ ...lookup, seconds: 3.4, missingIndexes: ["employee", "employee_address"] })).toBe(
      'incremental mode: 1,234 changed rows found in 3.4 s, 2 chunk statement(s); no changed_at index on employee, employee_address: each scanned in full (task/README.md, "Publish schema indexes")',
    );
  });
});
