/**
 * No late change lost: a change a loader commits after a run started is exported by a later run, exactly once. The
 * run's upper bound stays below the start of the oldest open transaction of the warehouse (a loader writing the
 * database's time), and change_lag_seconds covers a loader whose changed_at lies behind its commit.
 */
import { Client } from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { employeeIds, exportFixture, storedMessages, type ExportFixture } from "../support/exportFixture";
import { openedTransaction, runTask, taskBundle } from "../support/taskProcess";

/** Messages at the broker carrying the employee with this first name. */
function delivered(f: ExportFixture, employeeId: string, firstName: string): number {
  let n = 0;
  for (const m of storedMessages(f))
    for (const e of (JSON.parse(m.body!) as { entities: { UserId: string; FirstName: string }[] }).entities)
      if (e.UserId === employeeId && e.FirstName === firstName) n += m.deliveries;
  return n;
}

async function loader(f: ExportFixture): Promise<Client> {
  const c = new Client({ connectionString: f.db.url, application_name: "hr-loader" });
  await c.connect();
  return c;
}

describe("change capture: a loader transaction open across a run", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 200 }), taskBundle()]);
    expect((await runTask(f.platform.args)).code).toBe(0);
  });
  afterAll(async () => f?.close());

  it("an update made in an open transaction, a run, the commit, another run: the change reaches the queue exactly once", async () => {
    const [employee] = await employeeIds(f, 1);
    const hr = await loader(f);
    try {
      await hr.query("BEGIN");
      await hr.query(
        `UPDATE ${f.platform.publishSchema}.employee SET first_name = 'Late', changed_at = localtimestamp WHERE employee_id = $1`,
        [employee],
      );
      const during = await runTask(f.platform.args);
      expect(during.code).toBe(0);
      expect(delivered(f, employee, "Late")).toBe(0);
      // The run names the transaction that held its upper bound back.
      const bound = during.events.find((e) => e.event === "run.upperBound") as
        { heldBy: { applicationName: string } } | undefined;
      expect(bound?.heldBy.applicationName).toBe("hr-loader");
      await hr.query("COMMIT");
    } finally {
      await hr.end();
    }
    const after = await runTask(f.platform.args);
    expect(after.code).toBe(0);
    expect(delivered(f, employee, "Late")).toBe(1);
    expect((await runTask(f.platform.args)).code).toBe(0);
    expect(delivered(f, employee, "Late")).toBe(1);
  });

  it("the oldest-transaction function shows a least-privileged role the transactions of other roles, and only their start", async () => {
    await f.pool.query(
      "DO $$ BEGIN CREATE ROLE hub_export_probe LOGIN PASSWORD 'probe'; EXCEPTION WHEN duplicate_object THEN NULL; END $$",
    );
    await f.pool.query(`GRANT USAGE ON SCHEMA ${f.platform.stagingSchema} TO hub_export_probe`);
    const url = new URL(f.db.url);
    url.username = "hub_export_probe";
    url.password = "probe";
    const task = new Client({ connectionString: url.toString() });
    const hr = await loader(f);
    await task.connect();
    try {
      await hr.query("BEGIN; SELECT 1");
      const { rows: start } = await hr.query<{ xact_start: Date }>(
        "SELECT xact_start FROM pg_stat_activity WHERE pid = pg_backend_pid()",
      );
      // Without it the role sees nothing of the other sessions.
      const { rows: direct } = await task.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND xact_start IS NOT NULL AND pid <> pg_backend_pid()",
      );
      expect(direct[0].n).toBe(0);
      const { rows } = await task.query(`SELECT * FROM ${f.platform.stagingSchema}.hub_acme_oldest_xact()`);
      expect(rows).toEqual([
        {
          xact_start: start[0].xact_start,
          pid: expect.any(Number),
          application_name: "hr-loader",
          usename: "postgres",
          hidden_sessions: 0,
        },
      ]);
    } finally {
      await hr.end();
      await task.end();
      await f.pool.query(
        `REVOKE USAGE ON SCHEMA ${f.platform.stagingSchema} FROM hub_export_probe; DROP ROLE hub_export_probe`,
      );
    }
  });
});

describe("change capture: a loader whose changed_at lies behind its commit (change_lag_seconds)", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 200, parameters: { change_lag_seconds: 20 } }), taskBundle()]);
    expect((await runTask(f.platform.args)).code).toBe(0);
  });
  afterAll(async () => f?.close());

  it("a change dated behind its transaction's start, committed after a run: the next run exports it, once", async () => {
    const [employee] = await employeeIds(f, 1);
    const hr = await loader(f);
    try {
      await hr.query("BEGIN");
      await hr.query(
        `UPDATE ${f.platform.publishSchema}.employee SET first_name = 'Behind', changed_at = localtimestamp - interval '10 seconds' WHERE employee_id = $1`,
        [employee],
      );
      const during = await runTask(f.platform.args);
      expect(during.code).toBe(0);
      // Dated just after that run's upper bound, instead of waiting for the change to grow 20 s old: the bound is the
      // database time less 20 s, so the change still lies behind its transaction's start (where no horizon but the lag
      // protects it).
      const { rows } = await f.pool.query<{ through: string }>(
        `SELECT max(changed_through)::text AS through FROM ${f.t.watermark} WHERE transaction_id = $1`,
        [openedTransaction(during)],
      );
      const { rows: dated } = await hr.query<{ behind: boolean }>(
        `UPDATE ${f.platform.publishSchema}.employee SET changed_at = $2::timestamp + interval '1 millisecond' WHERE employee_id = $1 RETURNING changed_at < localtimestamp AS behind`,
        [employee, rows[0].through],
      );
      expect(dated[0].behind).toBe(true);
      await hr.query("COMMIT");
    } finally {
      await hr.end();
    }
    expect(delivered(f, employee, "Behind")).toBe(0);
    expect((await runTask(f.platform.args)).code).toBe(0);
    expect(delivered(f, employee, "Behind")).toBe(1);
    expect((await runTask(f.platform.args)).code).toBe(0);
    expect(delivered(f, employee, "Behind")).toBe(1);
  });
});
