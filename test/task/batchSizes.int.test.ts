/**
 * Batches as the specification sizes them: every message holds records_per_hub_message entities but at most one per
 * tenant and country per run, and every ERS request records_per_ers_request but at most one per tenant per run, across
 * the extract's chunks and parts and the publisher's streaming; also after a kill (the carried employees are stored
 * with the part's cursor).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, employeesInScope, type ExportFixture } from "../support/exportFixture";
import { openedTransaction, runTask, startTask, taskBundle } from "../support/taskProcess";
import { TENANTS } from "../../bench/platform";
import { taskSessionsGone } from "../support/database";

const PER_MESSAGE = 3;
const PER_REQUEST = 7;
const ENV = { HUB_EXPORT_CHUNK_SIZE: "40", HUB_EXPORT_EXTRACT_WORKERS: "2" };

describe("batch sizes across extract chunks and parts", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([
      exportFixture({
        employees: 400,
        parameters: { records_per_hub_message: PER_MESSAGE, records_per_ers_request: PER_REQUEST },
        emulator: { ersMaxBatch: PER_REQUEST },
      }),
      taskBundle(),
    ]);
  });
  afterAll(async () => f?.close());

  /** Per transaction, tenant and country: the messages that are not full. */
  async function partialMessages(
    tx: string,
  ): Promise<{ hub_tenant_id: string; country_code: string; partial: number; messages: number }[]> {
    const { rows } = await f.pool.query(
      `SELECT hub_tenant_id, country_code, count(*) FILTER (WHERE record_count < $2)::int AS partial, count(*)::int AS messages
         FROM ${f.t.archive} WHERE transaction_id = $1 GROUP BY 1, 2`,
      [tx, PER_MESSAGE],
    );
    return rows;
  }

  it("a full load: messages full but one per tenant and country, ERS requests full but one per tenant", async () => {
    const inScope = await employeesInScope(f.pool, f.platform.publishSchema);
    const result = await runTask(f.platform.args, ENV);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const tx = openedTransaction(result);
    const groups = await partialMessages(tx);
    // Many chunks (400 employees in chunks of 40, two parts) and several countries per tenant.
    expect(groups.length).toBeGreaterThan(4);
    for (const g of groups) expect(g.partial, `${g.hub_tenant_id} ${g.country_code}`).toBeLessThanOrEqual(1);
    const { rows } = await f.pool.query(
      `SELECT count(DISTINCT e)::int AS distinct, count(*)::int AS total, max(record_count) AS max FROM ${f.t.archive}, unnest(employee_ids) e WHERE transaction_id = $1`,
      [tx],
    );
    expect(rows[0]).toEqual({ distinct: inScope, total: inScope, max: PER_MESSAGE });
    const ers = f.emulator.state().ers;
    for (const t of [TENANTS.US, TENANTS.EU]) {
      const tenant = ers[t.hubTenantId];
      expect(tenant.duplicates).toBe(0);
      expect(tenant.requests, t.hubTenantId).toBe(Math.ceil(tenant.entities / PER_REQUEST));
    }
    expect(ers[TENANTS.US.hubTenantId].entities + ers[TENANTS.EU.hubTenantId].entities).toBe(inScope);
  });

  it("a run killed in its extract, resumed: still one partial message per tenant and country, nobody lost or twice", async () => {
    await f.pool.query(
      `UPDATE ${f.platform.publishSchema}.employee SET changed_at = localtimestamp WHERE plat_region IN ('US', 'EU')`,
    );
    const inScope = await employeesInScope(f.pool, f.platform.publishSchema);
    const task = await startTask(f.platform.args, ENV);
    await task.waitFor((e) => e.event === "run.open");
    // Once some chunks are committed and carry employees, before the extract ends.
    for (let i = 0; i < 1000; i++) {
      const { rows } = await f.pool.query<{ carrying: boolean }>(
        `SELECT coalesce(bool_or(cardinality(carry) > 0), false) AS carrying FROM ${f.t.runPart}`,
      );
      if (rows[0].carrying) break;
      await new Promise((r) => setTimeout(r, 2));
    }
    task.child.kill("SIGKILL");
    expect((await task.done).signal).toBe("SIGKILL");
    await taskSessionsGone(f.pool);
    const resumed = await runTask(f.platform.args, ENV);
    expect(resumed.code).toBe(0);
    const tx = resumed.events.find((e) => e.event === "run.open") as { transactionId: string; resumed: boolean };
    expect(tx.resumed).toBe(true);
    const groups = await partialMessages(tx.transactionId);
    for (const g of groups) expect(g.partial, `${g.hub_tenant_id} ${g.country_code}`).toBeLessThanOrEqual(1);
    const { rows } = await f.pool.query(
      `SELECT count(DISTINCT e)::int AS distinct, count(*)::int AS total FROM ${f.t.archive}, unnest(employee_ids) e WHERE transaction_id = $1`,
      [tx.transactionId],
    );
    expect(rows[0]).toEqual({ distinct: inScope, total: inScope });
  });
});
