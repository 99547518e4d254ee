import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pool } from "pg";
import { createTestDatabase } from "../support/database";
import { ACK_POOL_SIZE, openDatabase } from "../../task/warehouse/database";
import type { DatabaseSettings } from "../../task/connections/record";

describe("the task's database sessions", () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let settings: DatabaseSettings;
  const pools: Pool[] = [];
  beforeAll(async () => {
    db = await createTestDatabase("sessions");
    const url = new URL(db.url);
    settings = {
      host: url.hostname,
      port: Number(url.port),
      database: db.name,
      user: decodeURIComponent(url.username),
      password: decodeURIComponent(url.password),
      ssl: false,
    };
  });
  afterAll(async () => {
    await Promise.allSettled(pools.map((p) => p.end()));
    await db?.drop();
  });

  const open = async (options?: Parameters<typeof openDatabase>[2]) => {
    const pool = await openDatabase("HUB_DB_TEST", settings, options);
    pools.push(pool);
    return pool;
  };
  const setting = async (pool: Pool, name: string) =>
    (await pool.query<{ v: string }>(`SELECT current_setting($1) AS v`, [name])).rows[0].v;

  it("commits acknowledgements asynchronously and everything else as the server says", async () => {
    const main = await open();
    const acks = await open({ max: ACK_POOL_SIZE, asynchronousCommit: true });
    expect(await setting(main, "synchronous_commit")).toBe("on");
    expect(await setting(acks, "synchronous_commit")).toBe("off");
    // Both still notice a killed client within a second.
    expect(await setting(main, "client_connection_check_interval")).toBe("1s");
    expect(await setting(acks, "client_connection_check_interval")).toBe("1s");
    expect(acks.options.max).toBe(ACK_POOL_SIZE);
  });

  it("names the connection and the database when it cannot connect", async () => {
    await expect(openDatabase("HUB_DB_TEST", { ...settings, password: "wrong" })).rejects.toThrow(
      /^cannot connect to the database of connection HUB_DB_TEST \(127\.0\.0\.1:\d+\/sessions_[0-9a-f]+\): 28P01: /,
    );
  });
});
