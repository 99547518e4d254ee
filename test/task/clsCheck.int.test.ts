/**
 * The unknown-code check of a run, on the embedded PostgreSQL with the bundled task: report mode (reported per field,
 * everything published) and strict mode (the affected employees' messages held back, marked HELD_BACK with a reason,
 * and published by the first run whose load sheet has their codes). `cls check` on demand against the same data.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, employeesInScope, lastHistory, type ExportFixture } from "../support/exportFixture";
import { runTask, taskBundle } from "../support/taskProcess";
import { QUEUES } from "../../bench/platform";
import { SAMPLE_BUSINESS_OBJECTS } from "../../task/model/sampleData";
import { buildLoadSheet, type LoadSheet } from "../../cls/loadSheet";
import { loadSheetCsv } from "../../cls/csv";
import type { BusinessObject } from "../../core/clsTable";
import { checkDatabase } from "../../task/cls/databaseCheck";
import { latestIntakeJobs } from "../../operate/status";
import { Client } from "pg";

/** The sample sheet without some codes of some business objects. */
function sheetWithout(missing: Partial<Record<BusinessObject, string[]>>): LoadSheet {
  const values = Object.fromEntries(
    Object.entries(SAMPLE_BUSINESS_OBJECTS).map(([b, list]) => [
      b,
      list.filter((v) => !missing[b as BusinessObject]?.includes(v.code)),
    ]),
  );
  return buildLoadSheet(values);
}

function writeSheet(dir: string, name: string, sheet: LoadSheet): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, loadSheetCsv(sheet));
  return file;
}

const history = (f: ExportFixture) => `${f.platform.stagingSchema}.HUB_EXPORT_RUN_HISTORY`;

async function scalar(f: ExportFixture, sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await f.pool.query<{ n: number }>(sql, params);
  return rows[0].n;
}

describe("unknown-code check, report mode", () => {
  let f: ExportFixture;
  let dir: string;
  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 300 }), taskBundle()]);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-cls-"));
  });
  afterAll(async () => {
    await f?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("reports unknown codes per field with counts and examples in the log, the run history and status, and publishes everything", async () => {
    const sheet = writeSheet(dir, "sheet.csv", sheetWithout({ "Job Profile": ["SALES_REP"], Country: ["DE"] }));
    const result = await runTask([...f.platform.args, "--cls", sheet], { HUB_EXPORT_CHUNK_SIZE: "100" });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const inScope = await employeesInScope(f.pool, f.platform.publishSchema);
    expect(await f.count(f.t.status, "status = 'PUBLISHED'")).toBe(inScope);
    expect(await f.count(f.t.messages)).toBe(0);

    const pub = f.platform.publishSchema;
    const salesReps = await scalar(
      f,
      `SELECT count(*)::int AS n FROM ${pub}.employee WHERE plat_region IN ('US','EU') AND job_profile = 'SALES_REP'`,
    );
    const inGermany = await scalar(
      f,
      `SELECT count(*)::int AS n FROM ${pub}.employee WHERE plat_region IN ('US','EU') AND country_code = 'DE'`,
    );
    const addressesInGermany = await scalar(
      f,
      `SELECT count(*)::int AS n FROM ${pub}.employee_address a JOIN ${pub}.employee e USING (employee_id) WHERE e.plat_region IN ('US','EU') AND a.country_code = 'DE'`,
    );
    expect(salesReps).toBeGreaterThan(0);
    expect(inGermany).toBeGreaterThan(0);

    const { rows } = await f.pool.query(`SELECT event, detail FROM ${history(f)} ORDER BY history_id`);
    expect(rows).toHaveLength(1);
    expect(rows[0].event).toBe("ExecutionCompleted");
    const check = rows[0].detail.unknownCodes;
    expect(check).toMatchObject({ sheet, mode: "report", checkedMessages: inScope, heldBack: 0, released: 0 });
    expect(check.fields["User.RoleCode"]).toEqual({
      codes: 1,
      occurrences: salesReps,
      employees: salesReps,
      examples: [{ code: "SALES_REP", occurrences: salesReps }],
    });
    expect(check.fields["User.CountryCode"]).toEqual({
      codes: 1,
      occurrences: inGermany,
      employees: inGermany,
      examples: [{ code: "DE", occurrences: inGermany }],
    });
    expect(check.fields["UserAddress.CountryCode"].occurrences).toBe(addressesInGermany);
    // Only fields with unknown codes are listed.
    expect(Object.keys(check.fields).every((k) => k.endsWith("CountryCode") || k === "User.RoleCode")).toBe(true);

    // The log: one warning per field, and the summary.
    const fieldEvents = result.events.filter((e) => e.event === "cls.unknownField");
    // In the CLS table's order (the history's JSON object orders its keys its own way).
    expect(fieldEvents.map((e) => e.field)).toEqual(
      [
        "User.CountryCode",
        "User.RoleCode",
        "UserAddress.CountryCode",
        "UserEducation.CountryCode",
        "UserDependent.CountryCode",
        "UserContact.CountryCode",
      ].filter((k) => k in check.fields),
    );
    expect(fieldEvents.map((e) => e.field).sort()).toEqual(Object.keys(check.fields).sort());
    expect(String(fieldEvents.find((e) => e.field === "User.RoleCode")!.msg)).toBe(
      `User.RoleCode: 1 unknown code in ${salesReps} employee${salesReps === 1 ? "" : "s"} (${salesReps} time${salesReps === 1 ? "" : "s"}), e.g. SALES_REP (${salesReps})`,
    );

    // hub-export status reads it back.
    const client = new Client({ connectionString: f.db.url });
    await client.connect();
    try {
      const [job] = await latestIntakeJobs(client, f.platform.stagingSchema, f.platform.config.jobName, 1);
      expect(job.unknownCodes?.fields["User.RoleCode"].examples[0].code).toBe("SALES_REP");
      expect(job.counts?.heldBack).toBe(0);
    } finally {
      await client.end();
    }
  });

  it("refuses to start when the sheet given is missing or not a load sheet, before touching data", async () => {
    const missing = await runTask([...f.platform.args, "--cls", path.join(dir, "absent.csv")]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`CLS load sheet not found at ${path.join(dir, "absent.csv")}`);
    const bad = path.join(dir, "bad.csv");
    fs.writeFileSync(bad, "CODE,NAME\nX,Y\n");
    const invalid = await runTask([...f.platform.args, "--cls", bad]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain(
      `${bad}: is not a CLS load sheet: expected the columns SYSTEM, CLS_ENTITY_NAME, CLS_CODE_FIELD_NAME, CLS_CODE, CLS_DESCRIPTION, found CODE, NAME`,
    );
    expect(invalid.stderr).not.toMatch(/\n\s+at /);
    const mode = await runTask([...f.platform.args, "--cls", bad, "--cls-mode", "loose"]);
    expect(mode.code).toBe(2);
    expect(mode.stderr).toContain("--cls-mode must be report or strict, got 'loose'");
  });
});

describe("unknown-code check, strict mode", () => {
  let f: ExportFixture;
  let dir: string;
  let oldSheet: string;
  let newSheet: string;
  let counsels: string[];
  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 300, seed: 5 }), taskBundle()]);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-cls-"));
    oldSheet = writeSheet(dir, "old.csv", sheetWithout({ "Job Profile": ["COUNSEL"] }));
    newSheet = writeSheet(dir, "new.csv", sheetWithout({}));
    const { rows } = await f.pool.query<{ employee_id: string }>(
      `SELECT employee_id FROM ${f.platform.publishSchema}.employee WHERE plat_region IN ('US','EU') AND job_profile = 'COUNSEL' ORDER BY 1`,
    );
    counsels = rows.map((r) => r.employee_id);
  });
  afterAll(async () => {
    await f?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const queued = () => {
    const state = f.emulator.state();
    return (
      state.queues.US.destinations[QUEUES.US.queueName].count + state.queues.EU.destinations[QUEUES.EU.queueName].count
    );
  };

  it("holds back the affected employees' messages, marked HELD_BACK with the reason; the run completes", async () => {
    expect(counsels.length).toBeGreaterThan(1);
    const inScope = await employeesInScope(f.pool, f.platform.publishSchema);
    const result = await runTask([...f.platform.args, "--cls", oldSheet, "--cls-mode", "strict"], {
      HUB_EXPORT_CHUNK_SIZE: "100",
    });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const { rows: held } = await f.pool.query<{ e: string; reason: string; attempts: number }>(
      `SELECT unnest(m.employee_ids) AS e, s.reason, s.attempts FROM ${f.t.status} s JOIN ${f.t.archive} m USING (message_id) WHERE s.status = 'HELD_BACK' ORDER BY 1`,
    );
    // Every message of the run is archived, the held-back ones too (_STATUS says they were not published).
    expect(await f.count(f.t.messages)).toBe(0);
    expect(held.map((r) => r.e)).toEqual(counsels);
    for (const r of held) {
      expect(r.reason).toBe(
        "unknown codes User.RoleCode=COUNSEL (strict CLS check); retried once the CLS load sheet has them",
      );
      expect(r.attempts).toBe(0);
    }
    expect(await f.count(f.t.status, "status = 'PUBLISHED'")).toBe(inScope - counsels.length);
    expect(queued()).toBe(inScope - counsels.length);
    expect(await f.count(f.t.archive)).toBe(inScope);
    const { rows: jobs } = await f.pool.query(
      `SELECT status, failed_count, held_back_count, published_count FROM ${f.t.completedRuns}`,
    );
    expect(jobs).toEqual([
      {
        status: "ExecutionCompleted",
        failed_count: 0,
        held_back_count: counsels.length,
        published_count: inScope - counsels.length,
      },
    ]);
    const { rows: hist } = await f.pool.query(`SELECT detail FROM ${history(f)}`);
    expect(hist[0].detail).toMatchObject({
      heldBack: counsels.length,
      failed: 0,
      unknownCodes: {
        mode: "strict",
        heldBack: counsels.length,
        fields: { "User.RoleCode": { codes: 1, employees: counsels.length } },
      },
    });
    expect(result.events.some((e) => e.event === "cls.done" && e.heldBack === counsels.length)).toBe(true);
  });

  it("holds back a later message of an affected employee even when its own codes are known, and cls check shows what is held", async () => {
    // One held employee becomes a sales rep (a known code): its new message must wait for the held one.
    const moved = counsels[0];
    await f.pool.query(
      `UPDATE ${f.platform.publishSchema}.employee SET job_profile = 'SALES_REP', changed_at = localtimestamp WHERE employee_id = $1`,
      [moved],
    );
    const result = await runTask([...f.platform.args, "--cls", oldSheet, "--cls-mode", "strict"]);
    expect(result.code).toBe(0);
    const { rows } = await f.pool.query<{ transaction_id: string; reason: string }>(
      `SELECT m.transaction_id, s.reason FROM ${f.t.status} s JOIN ${f.t.archive} m USING (message_id) WHERE s.status = 'HELD_BACK' AND $1 = ANY(m.employee_ids) ORDER BY m.created_at`,
      [moved],
    );
    expect(rows).toHaveLength(2);
    expect(rows[1].reason).toBe(
      `employee ${moved} has a message held back for unknown codes (strict CLS check); released with it`,
    );
    expect(await f.count(f.t.status, "status = 'HELD_BACK'")).toBe(counsels.length + 1);

    const input = {
      stagingSchema: f.platform.stagingSchema,
      publishSchema: f.platform.publishSchema,
      clientName: "ACME",
      empTypeDefault: "Sales",
      empGenderDefault: "Not_Declared",
    };
    const client = new Client({ connectionString: f.db.url });
    await client.connect();
    try {
      const before = await checkDatabase(client, input, sheetWithout({ "Job Profile": ["COUNSEL"] }));
      expect(before.platRegions).toEqual(["EU", "US"]);
      expect(before.fields["User.RoleCode"]).toMatchObject({
        codes: 1,
        employees: counsels.length - 1,
        examples: [{ code: "COUNSEL", occurrences: counsels.length - 1 }],
      });
      expect(before.heldBack).toEqual({ messages: counsels.length + 1, stillUnknown: counsels.length });
      const after = await checkDatabase(client, input, sheetWithout({}));
      expect(after.fields).toEqual({});
      expect(after.heldBack).toEqual({ messages: counsels.length + 1, stillUnknown: 0 });
    } finally {
      await client.end();
    }
  });

  it("publishes every held-back message once the sheet has the codes, and archives them", async () => {
    const before = queued();
    const result = await runTask([...f.platform.args, "--cls", newSheet, "--cls-mode", "strict"]);
    expect(result.code).toBe(0);
    expect(await f.count(f.t.status, "status = 'HELD_BACK'")).toBe(0);
    expect(await f.count(f.t.messages)).toBe(0);
    expect(queued()).toBe(before + counsels.length + 1);
    const release = result.events.find((e) => e.event === "cls.release");
    expect(release).toMatchObject({ held: counsels.length + 1, released: counsels.length + 1, stillHeld: 0 });
    const { rows } = await f.pool.query(
      `SELECT held_back_count, retried_count, status FROM ${f.t.completedRuns} ORDER BY finished_at DESC LIMIT 1`,
    );
    expect(rows[0]).toEqual({ held_back_count: 0, retried_count: counsels.length + 1, status: "ExecutionCompleted" });
    expect((await lastHistory(f)).detail.unknownCodes).toMatchObject({
      released: counsels.length + 1,
      heldBack: 0,
      fields: {},
    });
  });
});
