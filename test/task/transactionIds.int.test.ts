/**
 * Every message is traceable by HUB_INTAKE_JOB.transaction_id: a message carries the transaction id of the run that
 * publishes it (queue properties, body header, ERS request, _STATUS row), also when an earlier run extracted it, and
 * `hub-export status --transaction ID` lists exactly the messages the hub received under that id.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, type ExportFixture, statusOf } from "../support/exportFixture";
import { openedTransaction, runTask, taskBundle } from "../support/taskProcess";
import { JOB_NAME, QUEUES, TENANTS, emulatorConfig } from "../../bench/platform";
import { startEmulator } from "../../emulator";

const FAST_RETRY = {
  HUB_EXPORT_RETRY_BASE_MS: "5",
  HUB_EXPORT_RETRY_MAX_MS: "50",
  HUB_EXPORT_RETRY_ATTEMPTS: "3",
  HUB_EXPORT_CHUNK_SIZE: "100",
};

describe("transaction ids: a message failed in run A and published by run B", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([
      exportFixture({ employees: 300, emulator: { rejectDestinations: [QUEUES.EU.queueName] } }),
      taskBundle(),
    ]);
  });
  afterAll(async () => f?.close());

  it("carries B everywhere, and status --transaction lists exactly what the hub received under each id", async () => {
    const a = await runTask(f.platform.args, FAST_RETRY);
    expect(a.code).toBe(3);
    const txA = openedTransaction(a);
    // The EU destination accepts again: the next run publishes the failed EU messages.
    const port = Number(new URL(f.emulator.urls.base).port);
    await f.emulator.close();
    f.emulator = await startEmulator({ port, config: emulatorConfig() });
    const b = await runTask(f.platform.args, FAST_RETRY);
    expect(b.stderr).toBe("");
    expect(b.code).toBe(0);
    const txB = openedTransaction(b);
    expect(txB).not.toBe(txA);

    // The EU messages were extracted by A; the hub received them under B: properties, body header.
    const eu = f.emulator.state({ messages: true }).queues.EU.destinations[QUEUES.EU.queueName].messages!;
    expect(eu.length).toBeGreaterThan(0);
    for (const m of eu) {
      expect(m.properties!.transactionId).toBe(txB);
      expect(JSON.parse(m.body!).header.transactionId).toBe(txB);
    }
    const { rows: extractedBy } = await f.pool.query(
      `SELECT DISTINCT transaction_id FROM ${f.t.archive} WHERE message_id = ANY($1::uuid[])`,
      [eu.map((m) => m.messageId)],
    );
    expect(extractedBy).toEqual([{ transaction_id: txA }]);
    // ERS: the EU tenant's entities under B only.
    expect(Object.keys(f.emulator.state().ers[TENANTS.EU.hubTenantId].transactions)).toEqual([txB]);
    // _STATUS: their rows name B; B is in HUB_INTAKE_JOB (A, ExecutionFailed, is not).
    expect(await f.count(f.t.status, `transaction_id = '${txB}'`)).toBe(eu.length);
    const { rows: jobs } = await f.pool.query(`SELECT transaction_id FROM ${f.t.intakeJob}`);
    expect(jobs).toEqual([{ transaction_id: txB }]);

    // status --transaction: exactly the messages the hub received under each id.
    const listed = async (tx: string) => {
      const r = await statusOf(f, "--transaction", tx, "--json");
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as {
        transactionId: string;
        received: { messageId: string; status: string; employeeIds: string[] }[];
        notPublished: unknown[];
      };
    };
    const atB = await listed(txB);
    expect(atB.received.map((m) => m.messageId).sort()).toEqual(eu.map((m) => m.messageId).sort());
    expect(atB.notPublished).toEqual([]);
    const us = f.emulator.state({ messages: true }).queues.US.destinations[QUEUES.US.queueName]?.messages ?? [];
    expect(us).toHaveLength(0); // the emulator restarted: A's US messages were received by the first one
    const atA = await listed(txA);
    const { rows: usIds } = await f.pool.query<{ message_id: string }>(
      `SELECT message_id FROM ${f.t.archive} WHERE transaction_id = $1 AND hub_tenant_id = $2 ORDER BY 1`,
      [txA, TENANTS.US.hubTenantId],
    );
    expect(atA.received.map((m) => m.messageId)).toEqual(usIds.map((r) => r.message_id));
    expect(atA.received.every((m) => m.status === "PUBLISHED" && m.employeeIds.length === 1)).toBe(true);
    expect(atA.notPublished).toEqual([]);

    const text = await statusOf(f, "--transaction", txB);
    expect(text.stdout.split("\n")[1]).toBe(`Run ${txB} of ${JOB_NAME}: ExecutionCompleted`);
    expect(text.stdout).toContain(
      `Received by the hub under this transaction id:\n  ${atB.received[0].messageId}  PUBLISHED `,
    );
    expect(text.stdout).toContain(`  (${eu.length} messages)\nTried by this run and not published:\n  (0 messages)\n`);
  });
});
