/**
 * A database error in one part of the extract (parts are mapped side by side on sessions of their own): the other
 * parts take no next chunk, the run waits for them before it records its end, so that nothing of it works on after its
 * last log line, and the next run resumes with nothing lost.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  archivedEmployees,
  exportFixture,
  employeesInScope,
  lastHistory,
  type ExportFixture,
} from "../support/exportFixture";
import { finalEvent, openedTransaction, runTask, taskBundle } from "../support/taskProcess";
import { taskSessionsGone } from "../support/database";
import { PART_SEQ_SPAN } from "../../task/phases/extract";

const CHUNK = 25;
const ENV = { HUB_EXPORT_CHUNK_SIZE: String(CHUNK), HUB_EXPORT_EXTRACT_WORKERS: "2" };

describe("export task: a database error in one extract part", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 600, seed: 17 }), taskBundle()]);
  });
  afterAll(async () => f?.close());

  it("stops the other parts before their next chunk; the run's last line is its end; the next run loses nothing", async () => {
    // The second part's first chunk fails as a statement cancelled by the server would (not a data error); the first
    // part's chunks take half a second each, so that one is in progress when the other fails.
    const s = f.platform.stagingSchema;
    await f.pool.query(
      `CREATE FUNCTION ${s}.fail_second_part() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
         IF NEW.seq >= ${PART_SEQ_SPAN} THEN RAISE EXCEPTION 'canceling statement due to statement timeout' USING ERRCODE = '57014'; END IF;
         RETURN NEW; END $$;
       CREATE FUNCTION ${s}.slow_chunk() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.5); RETURN NULL; END $$;
       CREATE TRIGGER fail_second_part BEFORE INSERT ON ${f.t.messages} FOR EACH ROW EXECUTE FUNCTION ${s}.fail_second_part();
       CREATE TRIGGER slow_chunk AFTER INSERT ON ${f.t.messages} FOR EACH STATEMENT EXECUTE FUNCTION ${s}.slow_chunk()`,
    );
    const r = await runTask(f.platform.args, ENV);
    await taskSessionsGone(f.pool);
    expect(finalEvent(r), r.stdout.split("\n").slice(-4).join("\n")).toBe("run.stopped");
    const tx = openedTransaction(r);
    expect(await lastHistory(f)).toMatchObject({
      event: "Stopped",
      detail: { phase: "EXTRACT", reason: "canceling statement due to statement timeout" },
    });
    // The first part stopped at most a chunk after the failure: it did not extract its whole range.
    expect(await archivedEmployees(f, tx), "employees extracted after the failure").toBeLessThanOrEqual(2 * CHUNK);

    await f.pool.query(`DROP TRIGGER fail_second_part ON ${f.t.messages}; DROP TRIGGER slow_chunk ON ${f.t.messages}`);
    const next = await runTask(f.platform.args, ENV);
    expect(next.code, next.stderr).toBe(0);
    expect(await archivedEmployees(f)).toBe(await employeesInScope(f.pool, f.platform.publishSchema));
  });
});
