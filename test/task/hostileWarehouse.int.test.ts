/**
 * Warehouse values that carry terminal escape sequences (an employee_id a loader took from anywhere) reach issue 21's
 * new outputs: the `extract.badRows` and `publish.setAside` log lines, the run history's detail, `hub-export status`
 * (its set-aside and held-back sections, `--transaction` pages, `--json`), and what `hub-export retry` and `discard`
 * print and record. None of them passes a control character on: they are escaped (core/redact.ts) wherever shown.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { employeeIds, exportFixture, lastHistory, type ExportFixture, statusOf } from "../support/exportFixture";
import { openedTransaction, runTask, taskBundle, type TaskResult } from "../support/taskProcess";
import { runMain } from "../support/cli";
import { fixtureStackFile } from "../fixtures/stacks";

const ENV = { HUB_EXPORT_CHUNK_SIZE: "50" };
/** C0 but the newline that ends a line, DEL, C1, and the bidi and line-separator characters. */
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
/** A title change, a clear screen, colours, CSI as one C1 character, a right-to-left override and a line separator. */
const HOSTILE = "\x1b]0;owned\x07\x1b[2J\x1b[31mE\u009b31m\u202eX\u2028Y";
const TOO_WIDE = 11_000_000;

/** Every string of a JSON value (keys too). */
const strings = (v: unknown): string[] =>
  typeof v === "string"
    ? [v]
    : Array.isArray(v)
      ? v.flatMap(strings)
      : v && typeof v === "object"
        ? Object.entries(v).flatMap(([k, x]) => [k, ...strings(x)])
        : [];

/** The text as a terminal gets it has no control character, nor has any value a JSON reader gets out of it. */
function clean(what: string, text: string): void {
  expect(text, what).not.toMatch(CONTROL);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return;
  }
  for (const value of strings(doc)) expect(value, what).not.toMatch(CONTROL);
}

describe("warehouse values with escape sequences", () => {
  let f: ExportFixture;
  let run: TaskResult;
  let messageId: string;
  const duplicate = `${HOSTILE}-dup`;
  const wide = `${HOSTILE}-wide`;
  const cli = (...args: string[]) => runMain([...args, "--file", fixtureStackFile("qa"), "--database-url", f.db.url]);

  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 60, parameters: { set_aside_after_runs: 1 } }), taskBundle()]);
    const emp = `${f.platform.publishSchema}.employee`;
    const [model] = await employeeIds(f, 1);
    // A loader's warehouse: no unique index on employee_id. Two rows of one hostile id, and one whose message is too wide.
    await f.pool.query(`DROP INDEX ${f.platform.publishSchema}.employee_pkey`);
    const copy = `INSERT INTO ${emp} SELECT $2, first_name, last_name, preferred_name, email, country_code, plat_region, job_family, gender, worker_status, job_profile, hire_date, termination_date, is_active, changed_at FROM ${emp} WHERE employee_id = $1`;
    for (const id of [duplicate, duplicate, wide]) await f.pool.query(copy, [model, id]);
    await f.pool.query(
      `INSERT INTO ${f.platform.publishSchema}.employee_address SELECT $2 || '-A1', $2, usage_type, repeat('x', $3::int), line2, city, region, postal_code, country_code, is_active, changed_at
         FROM ${f.platform.publishSchema}.employee_address WHERE address_id = $1 || '-A1'`,
      [model, wide, TOO_WIDE],
    );
    run = await runTask(f.platform.args, ENV);
    const { rows: aside } = await f.pool.query<{ message_id: string }>(
      `SELECT message_id FROM ${f.t.archive} WHERE $1 = ANY(employee_ids)`,
      [wide],
    );
    messageId = aside[0]?.message_id;
  });
  afterAll(async () => f?.close());

  it("the run's log lines (extract.badRows, publish.setAside) and its history detail escape them", async () => {
    expect(run.code, run.stderr).toBe(0);
    expect(run.events.find((e) => e.event === "extract.badRows" && e.kind === "duplicateIds")).toBeDefined();
    expect(run.events.find((e) => e.event === "publish.setAside")).toMatchObject({ messageId });
    clean("the task's stdout", run.stdout.replace(/\n/g, " "));
    for (const e of run.events) clean(`log line ${String(e.event)}`, JSON.stringify(e));
    clean("run history", JSON.stringify((await lastHistory(f)).detail));
  });

  it("what the operator reads: hub-export status (set-aside and held-back sections, --json, --transaction), and what retry and discard print (text and --json) and record", async () => {
    const tx = openedTransaction(run);
    for (const extra of [[], ["--json"], ["--transaction", tx], ["--transaction", tx, "--json"]]) {
      const r = await statusOf(f, ...extra);
      expect(r.code, r.stderr).toBe(0);
      clean(`status ${extra.join(" ")}`, extra.includes("--json") ? r.stdout : r.stdout.replace(/\n/g, " "));
      expect(r.stdout).toContain("\\x1b[2J");
    }
    const retry = await cli(
      "retry",
      "--message-id",
      messageId,
      "--actor",
      "alice",
      "--reason",
      "the row is fixed\x1b[2J",
    );
    expect(retry.code, retry.stderr).toBe(0);
    clean("retry", retry.stdout.replace(/\n/g, " "));
    expect(retry.stdout).toContain("SET_ASIDE -> FAILED");
    expect(retry.stdout).toContain(`employee ${"\\x1b"}]0;owned`);
    expect((await runTask(f.platform.args, ENV)).code).toBe(0);
    const discard = await cli("discard", "--message-id", messageId, "--actor", "bob", "--json");
    expect(discard.code, discard.stderr).toBe(0);
    clean("discard --json", discard.stdout);
    expect(JSON.parse(discard.stdout)).toMatchObject({
      action: "Discard",
      messageId,
      previousStatus: "SET_ASIDE",
      status: "DISCARDED",
    });
    const { rows } = await f.pool.query(
      `SELECT event, detail FROM ${f.t.runHistory} WHERE event IN ('Retry', 'Discard') ORDER BY history_id`,
    );
    expect(rows.map((r) => r.event)).toEqual(["Retry", "Discard"]);
    for (const r of rows) clean(`history ${r.event}`, JSON.stringify(r.detail));
    const status = await statusOf(f);
    clean("status after discard", status.stdout.replace(/\n/g, " "));
  });
});
