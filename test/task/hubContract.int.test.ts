/**
 * The task against a hub that lacks the assumed ERS and HRSYS endpoints (the emulator answers 404 there): with the
 * default contract a run stops, resumable, before it touches a record; the stack's hubContract settings make it
 * export everyone with no code change. Queue message properties follow the contract's names.
 */
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  exportFixture,
  employeesInScope,
  lastHistory,
  storedMessages,
  type ExportFixture,
} from "../support/exportFixture";
import { FINAL_EVENTS, finalEvent, openedTransaction, runTask, startTask, taskBundle } from "../support/taskProcess";
import { HUB_CONTRACT_DEFAULTS, type HubContract } from "../../core/hubContract";

const FAST_RETRY = { HUB_EXPORT_RETRY_BASE_MS: "5", HUB_EXPORT_RETRY_MAX_MS: "20", HUB_EXPORT_RETRY_ATTEMPTS: "3" };

describe("export task: a hub without the assumed ERS and HRSYS endpoints", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([
      exportFixture({ employees: 300, emulator: { missingEndpoints: ["ers.entities", "hrsys.intakeJobs"] } }),
      taskBundle(),
    ]);
  });
  afterAll(async () => f?.close());

  /** The stack's hubContract, as `pulumi up` would render it into the definition the task reads. */
  const useContract = (contract: HubContract) => {
    const def = JSON.parse(fs.readFileSync(f.platform.definitionFile, "utf8"));
    fs.writeFileSync(f.platform.definitionFile, JSON.stringify({ ...def, hubContract: contract }, null, 2));
  };

  it("with the default contract, records the report's failure, publishes everyone, and stops (resumable, exit 1) at ERS", async () => {
    const r = await runTask(f.platform.args, FAST_RETRY);
    expect(r.code).toBe(1);
    expect(finalEvent(r)).toBe("run.stopped");
    // The assumed HRSYS report never blocks a run: its failure is a warning.
    expect(r.events.filter((e) => e.event === "hub.call.failed" && e.api === "HRSYS").length).toBeGreaterThan(0);
    expect(r.stderr).not.toMatch(/HRSYS/);
    expect(r.stderr).toMatch(/run stopped in phase ERS: ERS API refused the request .*HTTP 404/);
    expect(r.stderr).toMatch(/the next run resumes the transaction/);
    const inScope = await employeesInScope(f.pool, f.platform.publishSchema);
    expect(new Set(storedMessages(f).map((m) => m.messageId)).size).toBe(inScope);
    // Not complete: no HUB_INTAKE_JOB row; its published messages wait in _MESSAGES for ERS.
    expect(await f.count(f.t.intakeJob)).toBe(0);
    expect(await f.count(f.t.messages)).toBe(inScope);
  });

  it("with the report turned off and ERS failures only recorded, exports everyone and completes", async () => {
    useContract({
      ...HUB_CONTRACT_DEFAULTS,
      intakeReport: { ...HUB_CONTRACT_DEFAULTS.intakeReport, enabled: false },
      ers: { ...HUB_CONTRACT_DEFAULTS.ers, onFailure: "record" },
    });
    const r = await runTask(f.platform.args, FAST_RETRY);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(finalEvent(r)).toBe("run.done");
    const inScope = await employeesInScope(f.pool, f.platform.publishSchema);
    expect(new Set(storedMessages(f).map((m) => m.messageId)).size).toBe(inScope);
    expect(await f.count(f.t.archive)).toBe(inScope);
    // The ERS failures are recorded: in the log, per batch, and counted on the run's last line.
    const failures = r.events.filter((e) => e.event === "hub.call.failed");
    expect(failures.length).toBeGreaterThan(0);
    expect(failures.every((e) => e.api === "ERS" && /HTTP 404/.test(String(e.reason)))).toBe(true);
    expect(r.events.at(-1)).toMatchObject({
      event: "run.done",
      status: "ExecutionCompleted",
      ersFailedEntities: inScope,
    });
    expect(await lastHistory(f)).toMatchObject({ event: "ExecutionCompleted", detail: { ersFailedEntities: inScope } });
    expect(f.emulator.state().intakeJobs).toEqual([]);
  });

  it("with a best-effort report, ERS off and renamed properties, records the report's failure and sends the hub's property names", async () => {
    await f.pool.query(
      `UPDATE ${f.platform.publishSchema}.employee SET changed_at = localtimestamp WHERE plat_region = 'US'`,
    );
    f.emulator.reset();
    useContract({
      ers: { ...HUB_CONTRACT_DEFAULTS.ers, enabled: false },
      intakeReport: { ...HUB_CONTRACT_DEFAULTS.intakeReport, onFailure: "record" },
      queueMessage: {
        ...HUB_CONTRACT_DEFAULTS.queueMessage,
        names: { ...HUB_CONTRACT_DEFAULTS.queueMessage.names, tenantId: "hubTenantId" },
      },
    });
    const r = await runTask(f.platform.args, FAST_RETRY);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(FINAL_EVENTS).toContain(finalEvent(r));
    const reported = r.events.filter((e) => e.event === "hub.call.failed");
    // STARTED and COMPLETED, for each of the two tenants; nothing about ERS, which is off.
    expect(reported.map((e) => `${String(e.api)} ${String(e.status)}`).sort()).toEqual([
      "HRSYS COMPLETED",
      "HRSYS COMPLETED",
      "HRSYS STARTED",
      "HRSYS STARTED",
    ]);
    const messages = storedMessages(f);
    expect(messages.length).toBeGreaterThan(0);
    expect(Object.keys(messages[0].properties!).sort()).toEqual([
      "dataDomainCode",
      "entityName",
      "hubTenantId",
      "recordCount",
      "systemCode",
      "transactionId",
    ]);
    expect(f.emulator.state().ers).toEqual({});
    expect(await f.count(f.t.messages)).toBe(0);
  });
});

describe("export task: HUB_INTAKE_JOB's row comes after every step that can still fail", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 300, seed: 4 }), taskBundle()]);
  });
  afterAll(async () => f?.close());

  it("a run whose final HRSYS report fails under onFailure: stop gets no row; the next run reports it, then writes the row", async () => {
    const def = JSON.parse(fs.readFileSync(f.platform.definitionFile, "utf8"));
    fs.writeFileSync(
      f.platform.definitionFile,
      JSON.stringify(
        {
          ...def,
          hubContract: {
            ...HUB_CONTRACT_DEFAULTS,
            intakeReport: { ...HUB_CONTRACT_DEFAULTS.intakeReport, onFailure: "stop" },
          },
        },
        null,
        2,
      ),
    );
    const task = await startTask(f.platform.args, FAST_RETRY);
    // Once both tenants' STARTED reports are in, the HRSYS API fails for good: the COMPLETED report cannot be made.
    while (f.emulator.state().intakeJobs.length < 2 && task.child.exitCode === null)
      await new Promise((r) => setTimeout(r, 2));
    f.emulator.setFaults("hrsys.intakeJobs:400=1");
    const r = await task.done;
    expect(r.code).toBe(1);
    expect(finalEvent(r)).toBe("run.stopped");
    expect(r.stderr).toMatch(/run stopped in phase REPORT: HRSYS API refused the request .*HTTP 400/);
    const tx = openedTransaction(r);
    expect(await f.count(f.t.intakeJob)).toBe(0);
    const { rows: history } = await f.pool.query(
      `SELECT event, detail->>'phase' AS phase FROM ${f.t.runHistory} WHERE transaction_id = $1 ORDER BY history_id`,
      [tx],
    );
    expect(history).toEqual([
      { event: "ExecutionCompleted", phase: null },
      { event: "Stopped", phase: "REPORT" },
    ]);

    f.emulator.setFaults("none");
    const next = await runTask(f.platform.args, FAST_RETRY);
    expect(next.code).toBe(0);
    expect(next.events.find((e) => e.event === "run.report")).toMatchObject({ transactionId: tx });
    const { rows } = await f.pool.query(`SELECT transaction_id::text AS transaction_id FROM ${f.t.intakeJob}`);
    expect(rows).toContainEqual({ transaction_id: tx });
    expect(
      f.emulator
        .state()
        .intakeJobs.filter((j) => j.transactionId === tx)
        .map((j) => j.status),
    ).toEqual(["STARTED", "STARTED", "COMPLETED", "COMPLETED"]);
  });
});
