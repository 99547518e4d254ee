/**
 * The acknowledgement writer against a real database: answers that arrive together share one statement (each
 * statement costs the server a fixed share of CPU), and a commit resolves only once its rows are in.
 */
import fs from "node:fs";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Pool, type PoolClient } from "pg";
import { createTestDatabase } from "../support/database";
import { provisionPlatform, TENANTS, type TestPlatform } from "../../bench/platform";
import { runTables, type RunTables } from "../../task/warehouse/tables";
import { StatusWriter, type StatusRecord } from "../../task/phases/statusWriter";
import { ACK_POOL_SIZE } from "../../task/warehouse/database";
import type { PipelineDefinition } from "../../core/definition";

describe("the acknowledgement writer", () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let platform: TestPlatform;
  let tables: RunTables;
  let pool: Pool;
  /** Acknowledgement statements sent through `counted`. */
  let statements = 0;
  let counted: Pool;

  beforeAll(async () => {
    db = await createTestDatabase("acks");
    const loopback = "http://127.0.0.1:9/api/";
    platform = await provisionPlatform({
      databaseUrl: db.url,
      hub: { queues: { US: loopback, EU: loopback, APAC: loopback }, cfg: loopback, ers: loopback, hrsys: loopback },
    });
    tables = runTables(JSON.parse(fs.readFileSync(platform.definitionFile, "utf8")) as PipelineDefinition);
    pool = new Pool({ connectionString: db.url, max: ACK_POOL_SIZE });
    // The same pool, counting the writer's statements (each pooled client wrapped once).
    const wrapped = new WeakSet<PoolClient>();
    counted = Object.create(pool, {
      connect: {
        value: async () => {
          const client: PoolClient = await pool.connect();
          if (!wrapped.has(client)) {
            wrapped.add(client);
            const query = client.query.bind(client) as (...args: unknown[]) => unknown;
            (client as unknown as { query: unknown }).query = (...args: unknown[]) => {
              if ((args[0] as { name?: string }).name === "hub-export-acknowledge") statements++;
              return query(...args);
            };
          }
          return client;
        },
      },
    });
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
    if (platform) fs.rmSync(platform.dir, { recursive: true, force: true });
  });

  /** A run with `n` queued messages of the US tenant. */
  async function queuedRun(n: number): Promise<{ tx: string; ids: string[] }> {
    const tx = randomUUID();
    const ids = Array.from({ length: n }, () => randomUUID());
    await pool.query(
      `INSERT INTO ${tables.run} (transaction_id, job_name, plat_client_name, phase, build_number, upper_bound) VALUES ($1, 'job', $2, 'PUBLISH', '1', now())`,
      [tx, `client-${tx}`],
    );
    await pool.query(
      `INSERT INTO ${tables.messages} (message_id, transaction_id, seq, hub_tenant_id, hub_destination, record_count) SELECT id, $1, s, $3, 'acme-empl-us', 1 FROM unnest($2::uuid[]) WITH ORDINALITY AS u(id, s)`,
      [tx, ids, TENANTS.US.hubTenantId],
    );
    return { tx, ids };
  }
  const published = (tx: string, id: string): StatusRecord => ({
    messageId: id,
    published: true,
    attempts: 1,
    transactionId: tx,
    tenantId: TENANTS.US.hubTenantId,
    destination: "acme-empl-us",
  });
  /** Commits, each from its own callback of one turn of the event loop, as answers arriving together are handled. */
  const together = (commits: (() => Promise<void>)[]) =>
    Promise.all(
      commits.map(
        (commit) => new Promise<void>((resolve, reject) => setImmediate(() => void commit().then(resolve, reject))),
      ),
    );

  it("writes the outcomes of answers handled in one turn of the event loop in one statement, committed when commit() resolves", async () => {
    const { tx, ids } = await queuedRun(10);
    const writer = new StatusWriter(counted, tables, tx, ACK_POOL_SIZE);
    statements = 0;
    await together(ids.map((id) => () => writer.commit([published(tx, id)])));
    expect(statements).toBe(1);
    const { rows } = await pool.query(
      `SELECT status, count(*)::int AS n FROM ${tables.status} WHERE transaction_id = $1 GROUP BY status`,
      [tx],
    );
    expect(rows).toEqual([{ status: "PUBLISHED", n: 10 }]);
    expect(writer.published).toBe(10);
  });

  it("carries outcomes and done messages in the same statement", async () => {
    const { tx, ids } = await queuedRun(6);
    const writer = new StatusWriter(counted, tables, tx, ACK_POOL_SIZE);
    await writer.commit(ids.slice(0, 3).map((id) => published(tx, id)));
    statements = 0;
    // The first three are done (their entities in ERS) while the last three are acknowledged.
    await together([
      () => writer.commit([], ids.slice(0, 3)),
      ...ids.slice(3).map((id) => () => writer.commit([published(tx, id)])),
    ]);
    expect(statements).toBe(1);
    const queued = await pool.query<{ message_id: string }>(
      `SELECT message_id FROM ${tables.messages} WHERE transaction_id = $1 ORDER BY seq`,
      [tx],
    );
    expect(queued.rows.map((r) => r.message_id)).toEqual(ids.slice(3));
    const counts = await pool.query(`SELECT messages, entities FROM ${tables.runTenant} WHERE transaction_id = $1`, [
      tx,
    ]);
    expect(counts.rows).toEqual([{ messages: 3, entities: 3 }]);
    const statuses = await pool.query(
      `SELECT count(*)::int AS n FROM ${tables.status} WHERE transaction_id = $1 AND status = 'PUBLISHED'`,
      [tx],
    );
    expect(statuses.rows[0].n).toBe(6);
  });
});
