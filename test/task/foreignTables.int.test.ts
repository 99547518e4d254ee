/**
 * A shared table another team changed after the install: HUB_INTAKE_JOB with an extra NOT NULL column without a
 * default. The run cannot write the row of its completion: it stops (exit 1, no stack trace, never "internal error"),
 * names the table and column and says what to do, and records the stop; once the column has a default, the next run
 * completes the transaction.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, lastHistory, type ExportFixture } from "../support/exportFixture";
import { finalEvent, openedTransaction, runTask, taskBundle } from "../support/taskProcess";

describe("export task: a shared table changed by another team", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 60, seed: 35 }), taskBundle()]);
  });
  afterAll(async () => f?.close());

  it("an extra NOT NULL column in HUB_INTAKE_JOB: the run stops naming it and the fix; the next run completes once it has a default", async () => {
    await f.pool.query(
      `ALTER TABLE ${f.t.intakeJob} ADD COLUMN platform_batch text NOT NULL DEFAULT 'b1'; ALTER TABLE ${f.t.intakeJob} ALTER COLUMN platform_batch DROP DEFAULT`,
    );
    const r = await runTask(f.platform.args);
    expect(r.code).toBe(1);
    const table = `${f.platform.stagingSchema.toLowerCase()}.hub_intake_job`;
    expect(r.stderr).toBe(
      `run stopped in phase REPORT: the database refused: null value in column "platform_batch" of relation "hub_intake_job" violates not-null constraint (SQLSTATE 23502; table ${table}, column platform_batch): ` +
        "a column is NOT NULL without a default, and the project does not write it: give it a default or drop its NOT NULL (ALTER TABLE ... ALTER COLUMN ...), then run again\n" +
        "the next run resumes the transaction\n",
    );
    expect(finalEvent(r)).toBe("run.stopped");
    expect(String(r.events.at(-1)?.reason)).not.toMatch(/\n\s+at /);
    const tx = openedTransaction(r);
    expect(await lastHistory(f)).toMatchObject({ event: "Stopped", transaction_id: tx, detail: { phase: "REPORT" } });

    await f.pool.query(`ALTER TABLE ${f.t.intakeJob} ALTER COLUMN platform_batch SET DEFAULT 'b1'`);
    const next = await runTask(f.platform.args);
    expect(next.code, next.stderr).toBe(0);
    expect(await f.count(f.t.intakeJob, `transaction_id = '${tx}'`)).toBe(1);
  });
});
