/**
 * Daily runs cost what changed: the changed employees are found through the changed_at indexes and only they are
 * mapped (the chunk statements a run issues are counted in the run history's detail.changes); without the indexes a
 * run still exports the same employees and warns once. The unknown-code check runs inside the extract statement and
 * finds what the check of the bodies finds.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, lastHistory, type ExportFixture } from "../support/exportFixture";
import { openedTransaction, runTask, taskBundle, type TaskResult } from "../support/taskProcess";
import { SAMPLE_BUSINESS_OBJECTS, touchEmployees } from "../../task/model/sampleData";
import { buildLoadSheet } from "../../cls/loadSheet";
import { loadSheetCsv } from "../../cls/csv";
import { checkStatements } from "../../task/cls/codeCheck";
import { UnknownCodes } from "../../cls/report";
import type { RunTables } from "../../task/warehouse/tables";
import { CHANGE_TABLES, changeIndexDdl } from "../../task/phases/changes";
import { PROJECT_ROOT } from "../support/cli";

const ENV = { HUB_EXPORT_CHUNK_SIZE: "50" };

interface Changes {
  mode: string;
  chunks: number;
  changedRows: number;
  missingIndexes: string[];
  firstLoad: boolean;
  limit: number;
  rowsByTable: Record<string, number>;
}

const changesOf = (r: TaskResult) => r.events.find((e) => e.event === "extract.done")?.changes as Changes | undefined;

/** Employee ids in the messages a run extracted (its transaction's archive rows). */
async function extracted(f: ExportFixture, r: TaskResult): Promise<string[]> {
  const tx = openedTransaction(r);
  const { rows } = await f.pool.query<{ e: string }>(
    `SELECT unnest(employee_ids) AS e FROM ${f.t.archive} WHERE transaction_id = $1 ORDER BY 1`,
    [tx],
  );
  return rows.map((x) => x.e);
}

async function inScope(f: ExportFixture, ids: string[]): Promise<string[]> {
  const { rows } = await f.pool.query<{ employee_id: string }>(
    `SELECT employee_id FROM ${f.platform.publishSchema}.employee WHERE employee_id = ANY($1) AND plat_region IN ('US', 'EU') ORDER BY 1`,
    [ids],
  );
  return rows.map((r) => r.employee_id);
}

describe("incremental runs", () => {
  let f: ExportFixture;
  let full: TaskResult;
  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 600 }), taskBundle()]);
    full = await runTask(f.platform.args, ENV);
    expect(full.code).toBe(0);
  });
  afterAll(async () => f?.close());

  it("the first run maps every chunk; a run after a few changes maps only theirs and exports exactly them; a run without changes maps none", async () => {
    const first = changesOf(full)!;
    // A first load from idl_date (no watermark yet), over incremental mode's limit (a tenth of the employees): its
    // count is that limit + 1, not the number of changed rows.
    expect(first).toMatchObject({ mode: "full", missingIndexes: [], firstLoad: true, limit: 60, changedRows: 61 });
    // 600 employees in chunks of 50.
    expect(first.chunks).toBeGreaterThanOrEqual(12);

    const touched = await touchEmployees(f.pool, { schema: f.platform.publishSchema, count: 12, seed: 5 });
    const run = await runTask(f.platform.args, ENV);
    expect(run.code).toBe(0);
    const changes = changesOf(run)!;
    expect(changes.mode).toBe("incremental");
    expect(changes.changedRows).toBe(12);
    // Rows of which tables: the employee's and its sub-entities' (the sample changes touch some of each).
    expect(changes.firstLoad).toBe(false);
    expect(Object.values(changes.rowsByTable).reduce((n, v) => n + v, 0)).toBe(12);
    expect(CHANGE_TABLES).toEqual(expect.arrayContaining(Object.keys(changes.rowsByTable)));
    // One chunk per part (two parts) at most: 12 employees fit one chunk of 50.
    expect(changes.chunks).toBeLessThanOrEqual(2);
    expect(await extracted(f, run)).toEqual(await inScope(f, touched));
    expect((await lastHistory(f)).detail.changes).toMatchObject({
      mode: "incremental",
      changedRows: 12,
      chunks: changes.chunks,
    });
    // The watermarks of every tenant and country advance, as after a full run.
    const { rows: marks } = await f.pool.query<{ n: number; stale: number }>(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE transaction_id::text <> $1)::int AS stale FROM ${f.t.watermark}`,
      [openedTransaction(run)],
    );
    expect(marks[0]).toEqual({ n: marks[0].n, stale: 0 });

    const idle = await runTask(f.platform.args, ENV);
    expect(idle.code).toBe(0);
    expect(changesOf(idle)).toMatchObject({ mode: "incremental", changedRows: 0, chunks: 0 });
    expect(await extracted(f, idle)).toEqual([]);
  });

  it("without the changed_at indexes the run exports the same employees and warns once, naming the tables and the DDL", async () => {
    const s = f.platform.publishSchema;
    await f.pool.query(`DROP INDEX ${s}.employee_changed_idx; DROP INDEX ${s}.employee_address_changed_idx`);
    try {
      const touched = await touchEmployees(f.pool, { schema: s, count: 10, seed: 6 });
      const run = await runTask(f.platform.args, ENV);
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      expect(await extracted(f, run)).toEqual(await inScope(f, touched));
      const warnings = run.events.filter((e) => e.event === "extract.changeIndexes");
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({
        level: "warn",
        missing: ["employee", "employee_address"],
        create: [
          `CREATE INDEX IF NOT EXISTS employee_changed_idx ON ${s}.employee (changed_at);`,
          `CREATE INDEX IF NOT EXISTS employee_address_changed_idx ON ${s}.employee_address (changed_at);`,
        ],
      });
      expect(changesOf(run)).toMatchObject({ mode: "incremental", missingIndexes: ["employee", "employee_address"] });
      expect((await lastHistory(f)).detail.changes).toMatchObject({
        missingIndexes: ["employee", "employee_address"],
        seconds: expect.any(Number),
      });
      // The run's last line says what the scan cost too.
      expect(run.events.find((e) => e.event === "run.done")?.changes).toMatchObject({
        missingIndexes: ["employee", "employee_address"],
        seconds: warnings[0].seconds,
      });
    } finally {
      await f.pool.query(
        `CREATE INDEX employee_changed_idx ON ${s}.employee (changed_at); CREATE INDEX employee_address_changed_idx ON ${s}.employee_address (changed_at)`,
      );
    }
    const again = await runTask(f.platform.args, ENV);
    expect(again.code).toBe(0);
    expect(again.events.some((e) => e.event === "extract.changeIndexes")).toBe(false);
  });

  it("changes with unknown codes change every picked employee's job profile, whatever the seed draws", async () => {
    const s = f.platform.publishSchema;
    // Any seed: before, only the employees whose hash was even got a job profile, so a few changes could have none.
    for (const seed of [11, 12, 13]) {
      const touched = await touchEmployees(f.pool, { schema: s, count: 6, seed, unknownCodes: true });
      expect(touched).toHaveLength(6);
      const { rows } = await f.pool.query<{ unknown: number }>(
        `SELECT count(*)::int AS unknown FROM ${s}.employee WHERE employee_id = ANY($1) AND job_profile LIKE '%\\_X'`,
        [touched],
      );
      expect(rows[0].unknown).toBe(6);
    }
  });
});

describe("the unknown-code check at the source", () => {
  let f: ExportFixture;
  let dir: string;
  beforeAll(async () => {
    [f] = await Promise.all([
      exportFixture({ employees: 300, parameters: { records_per_hub_message: 2 } }),
      taskBundle(),
    ]);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-cls-source-"));
  });
  afterAll(async () => {
    await f?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("finds in the extract statement the unknown codes, per field and per message, that the check of the bodies finds, and holds back the same messages", async () => {
    const missing: Partial<Record<keyof typeof SAMPLE_BUSINESS_OBJECTS, string[]>> = {
      Country: ["DE"],
      "Job Profile": ["SALES_REP"],
      Gender: ["Female"],
      "Related Person Relationship": ["SPOUSE"],
      "Communication Usage Type": ["WORK"],
    };
    const values = Object.fromEntries(
      Object.entries(SAMPLE_BUSINESS_OBJECTS).map(([b, list]) => [
        b,
        list.filter((v) => !missing[b as keyof typeof missing]?.includes(v.code)),
      ]),
    );
    const sheet = buildLoadSheet(values);
    const file = path.join(dir, "sheet.csv");
    fs.writeFileSync(file, loadSheetCsv(sheet));
    const run = await runTask([...f.platform.args, "--cls", file, "--cls-mode", "strict"], ENV);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const { detail } = await lastHistory(f);
    const summary = detail.unknownCodes as {
      checkedMessages: number;
      checkedAtSource: number;
      heldBack: number;
      fields: Record<string, unknown>;
    };
    expect(summary.checkedMessages).toBeGreaterThan(0);
    expect(summary.checkedAtSource).toBe(summary.checkedMessages);

    // The same messages checked from their bodies, as the check did before.
    const tx = openedTransaction(run);
    const { rows: ids } = await f.pool.query<{ message_id: string }>(
      `SELECT message_id FROM ${f.t.archive} WHERE transaction_id = $1`,
      [tx],
    );
    const statements = checkStatements({ archive: f.t.archive, status: f.t.status } as RunTables);
    const { rows } = await f.pool.query<{ by_code: never[]; by_message: { message_id: string; codes: string }[] }>(
      statements.screen,
      [
        ids.map((r) => r.message_id),
        sheet.rows.map((r) => `${r.CLS_ENTITY_NAME}.${r.CLS_CODE_FIELD_NAME}`),
        sheet.rows.map((r) => r.CLS_CODE),
      ],
    );
    const fromBodies = new UnknownCodes();
    fromBodies.add(rows[0].by_code);
    expect(Object.keys(summary.fields).length).toBeGreaterThanOrEqual(6);
    expect(summary.fields).toEqual(fromBodies.report());

    // Strict: every message with unknown codes is held back with the same list of codes in its reason.
    const { rows: held } = await f.pool.query<{ message_id: string; reason: string }>(
      `SELECT message_id, reason FROM ${f.t.status} WHERE status = 'HELD_BACK' AND transaction_id = $1`,
      [tx],
    );
    const reasons = new Map(held.map((h) => [h.message_id, h.reason]));
    expect(rows[0].by_message.length).toBeGreaterThan(0);
    for (const m of rows[0].by_message)
      expect(reasons.get(m.message_id)).toBe(
        `unknown codes ${m.codes} (strict CLS check); retried once the CLS load sheet has them`,
      );
    expect(summary.heldBack).toBe(held.length);
  });
});

describe("the publish schema's changed_at indexes", () => {
  it("task/README.md documents exactly the DDL the local model creates and the run-start warning asks for", () => {
    const readme = fs.readFileSync(path.join(PROJECT_ROOT, "task", "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("\n## Publish schema indexes\n"));
    const documented = /```sql\n([\s\S]*?)```/
      .exec(section.slice(0, section.indexOf("\n## ", 1)))![1]
      .trim()
      .split("\n");
    const model = fs
      .readFileSync(path.join(PROJECT_ROOT, "task", "model", "publish_schema.sql"), "utf8")
      .split("\n")
      .filter((l) => /\(changed_at\);$/.test(l));
    expect(documented).toEqual(changeIndexDdl("<PUBLISH_SCHEMA>"));
    expect(model).toEqual(documented);
    expect(documented.map((l) => / ON <PUBLISH_SCHEMA>\.(\w+) /.exec(l)![1])).toEqual(CHANGE_TABLES);
  });
});
