/**
 * No message stalls the publisher: a message over the lane's read-ahead (2 M characters) is taken by its empty lane
 * and sent, alone when it fits no batch, and the messages after it follow; messages of several wide records likewise.
 * Each run is bounded in time: before the fix the extract waited for room that never came, holding the run lock.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  employeeIds,
  exportFixture,
  employeesInScope,
  storedMessages,
  type ExportFixture,
} from "../support/exportFixture";
import { runTaskWithin, taskBundle } from "../support/taskProcess";

/** Makes the employees' first address line `chars` long, changed now. */
async function widen(f: ExportFixture, ids: string[], chars: number): Promise<void> {
  await f.pool.query(
    `UPDATE ${f.platform.publishSchema}.employee_address SET line1 = repeat('x', $2), changed_at = localtimestamp WHERE employee_id = ANY($1) AND address_id = employee_id || '-A1'`,
    [ids, chars],
  );
}

describe("publishing: a message over the read-ahead, then normal ones in the same lane", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 300 }), taskBundle()]);
  });
  afterAll(async () => f?.close());

  it("sends the large message and every one after it; the run completes", async () => {
    const [first] = await employeeIds(f, 1, "US");
    // 3 M characters: over the 2 M read-ahead, under the broker's 10 MB limit.
    await widen(f, [first], 3_000_000);
    const inScope = await employeesInScope(f.pool, f.platform.publishSchema);
    const result = await runTaskWithin(f.platform.args, { HUB_EXPORT_CHUNK_SIZE: "100" }, 40_000);
    expect(result.signal, "the run hung").toBeNull();
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(await f.count(f.t.status, "status = 'PUBLISHED'")).toBe(inScope);
    const messages = storedMessages(f);
    expect(messages).toHaveLength(inScope);
    const large = messages.filter((m) => (m.body?.length ?? 0) > 3_000_000);
    expect(large).toHaveLength(1);
    expect(JSON.parse(large[0].body!).entities[0].UserId).toBe(first);
  });
});

describe("publishing: several wide records per message", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([
      exportFixture({ employees: 200, parameters: { records_per_hub_message: 4, records_per_ers_request: 4 } }),
      taskBundle(),
    ]);
  });
  afterAll(async () => f?.close());

  it("messages of about 2.4 MB (each over the read-ahead, five over the broker's body limit) are all sent; the run completes", async () => {
    const wide = await employeeIds(f, 1000, "US");
    await widen(f, wide, 600_000);
    const inScope = await employeesInScope(f.pool, f.platform.publishSchema);
    const result = await runTaskWithin(f.platform.args, { HUB_EXPORT_CHUNK_SIZE: "50" }, 40_000);
    expect(result.signal, "the run hung").toBeNull();
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const messages = storedMessages(f);
    const employees = messages.flatMap((m) =>
      (JSON.parse(m.body!) as { entities: { UserId: string }[] }).entities.map((e) => e.UserId),
    );
    expect(new Set(employees).size).toBe(inScope);
    expect(employees).toHaveLength(inScope);
    expect(messages.filter((m) => (m.body?.length ?? 0) > 2_000_000).length).toBeGreaterThanOrEqual(8);
    expect(await f.count(f.t.status, "status <> 'PUBLISHED'")).toBe(0);
  });
});

describe("ERS: wide entities never take a request past the hub API's body limit", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 60 }), taskBundle()]);
  });
  afterAll(async () => f?.close());

  it("cuts a tenant's request of 100 entities where its bytes would pass 10 MiB; every entity reaches ERS once; the run completes", async () => {
    // Every US employee about 1 MB: a tenant's 100-entity request would be tens of MB, which the hub refuses (413).
    const wide = await employeeIds(f, 1000, "US");
    await widen(f, wide, 1_000_000);
    const inScope = await employeesInScope(f.pool, f.platform.publishSchema);
    const result = await runTaskWithin(f.platform.args, { HUB_EXPORT_CHUNK_SIZE: "20" }, 60_000);
    expect(result.signal, "the run hung").toBeNull();
    expect(result.code, result.stdout.split("\n").slice(-3).join("\n")).toBe(0);
    const ers = Object.values(f.emulator.state().ers);
    expect(ers.reduce((n, t) => n + t.entities, 0)).toBe(inScope);
    expect(ers.reduce((n, t) => n + t.duplicates, 0)).toBe(0);
    // Some tenant's entities went in more requests than records_per_ers_request alone would make (one per tenant).
    const requests = ers.reduce((n, t) => n + t.requests, 0);
    expect(requests).toBeGreaterThanOrEqual(ers.length + Math.floor((wide.length * 1_000_000) / (10 * 1024 * 1024)));
    expect(await f.count(f.t.messages)).toBe(0);
  });
});
