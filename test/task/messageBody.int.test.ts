/** The stored message body's layout, cut and changed without parsing: its entities one by one, its transaction id. */
import { describe, expect, it } from "vitest";
import { Client } from "pg";
import { entitiesText, entityTexts, withTransactionId } from "../../task/mapping/messageBody";
import { MESSAGE_STATUS } from "../../task/warehouse/messageStatus";
import { loadClientRunTables } from "../../templates";
import { createTestDatabase } from "../support/database";
import { BODY_PAGE_BYTES, withBodies } from "../../task/warehouse/archive";
import { Pool } from "pg";

describe("message bodies", () => {
  it("entityTexts splits at the commas between entities only, whatever their strings hold", () => {
    const entities = [
      {
        UserId: "E1",
        FirstName: 'A, "quoted" {name}',
        UserAddress: [{ AddressLine1: "1, Main [St]" }, { AddressLine1: "\\,}" }],
      },
      { UserId: "E2", UserAddress: [], Note: "é,ü\n" },
      { UserId: "E3" },
    ].map((e) => JSON.stringify(e));
    const texts = entityTexts(entities.join(","));
    expect(texts).toEqual(entities);
    expect(texts.map((t) => JSON.parse(t).UserId)).toEqual(["E1", "E2", "E3"]);
    expect(entityTexts(entities[0])).toEqual([entities[0]]);
  });

  it("withTransactionId replaces the header's id, as PostgreSQL writes it, and nothing else", async () => {
    const db = await createTestDatabase("body");
    const c = new Client({ connectionString: db.url });
    await c.connect();
    try {
      const old = "0f1e2d3c-4b5a-4978-8877-665544332211";
      const { rows } = await c.query<{ body: string }>(
        `SELECT '{"header":' || json_build_object('transactionId', $1::text, 'tenantId', 't', 'recordCount', 1)::text || ',"entities":[' || '{"UserId":"0f1e2d3c-4b5a-4978-8877-665544332211"}' || ']}' AS body`,
        [old],
      );
      const fresh = "9a8b7c6d-5e4f-4321-8765-0123456789ab";
      const body = withTransactionId(rows[0].body, fresh);
      expect(JSON.parse(body).header).toEqual({ transactionId: fresh, tenantId: "t", recordCount: 1 });
      expect(entitiesText(body)).toBe(`{"UserId":"${old}"}`);
      expect(withTransactionId(body, fresh)).toBe(body);
      expect(() => withTransactionId('{"entities":[]}', fresh)).toThrow("not a hub message body");
    } finally {
      await c.end();
      await db.drop();
    }
  });

  it("the run tables' SQL checks the statuses the task writes, no more, no fewer", () => {
    const sql = loadClientRunTables().text;
    const check = /CHECK \(status IN \(([^)]*)\)\)/.exec(sql);
    expect(check).not.toBeNull();
    expect(
      check![1]
        .split(",")
        .map((s) => s.trim().replace(/'/g, ""))
        .sort(),
    ).toEqual(Object.values(MESSAGE_STATUS).sort());
  });
});

describe("bodies read back from _ARCHIVE", () => {
  it("a page holds as many bodies as fit BODY_PAGE_BYTES, and always one: large retried messages never pile up in memory", async () => {
    const db = await createTestDatabase("bodies");
    const pool = new Pool({ connectionString: db.url, max: 1 });
    try {
      await pool.query("CREATE TABLE archive (message_id uuid PRIMARY KEY, body text NOT NULL)");
      const ids = [
        "00000000-0000-4000-8000-000000000001",
        "00000000-0000-4000-8000-000000000002",
        "00000000-0000-4000-8000-000000000003",
      ];
      const sizes = [BODY_PAGE_BYTES - 10, 1000, 20];
      for (const [i, id] of ids.entries())
        await pool.query("INSERT INTO archive VALUES ($1, repeat('x', $2))", [id, sizes[i]]);
      const listed = async () =>
        (
          await pool.query<{ message_id: string; bytes: number | null }>(
            "SELECT message_id, octet_length(body) AS bytes FROM archive ORDER BY message_id",
          )
        ).rows;
      const first = await withBodies(pool, { archive: "archive" }, await listed());
      expect(first.map((r) => [r.message_id, r.body?.length])).toEqual([[ids[0], sizes[0]]]);
      const rest = await withBodies(pool, { archive: "archive" }, (await listed()).slice(1));
      expect(rest.map((r) => [r.message_id, r.body?.length])).toEqual([
        [ids[1], 1000],
        [ids[2], 20],
      ]);
      // A message larger than a page alone; one that needs no body gets none.
      await pool.query("UPDATE archive SET body = repeat('y', $1) WHERE message_id = $2", [
        BODY_PAGE_BYTES * 2,
        ids[0],
      ]);
      const big = await withBodies(
        pool,
        { archive: "archive" },
        (await listed()).map((r, i) => (i === 1 ? { ...r, bytes: null } : r)),
      );
      expect(big.map((r) => [r.message_id, r.body?.length])).toEqual([[ids[0], BODY_PAGE_BYTES * 2]]);
      const none = await withBodies(pool, { archive: "archive" }, [
        { message_id: ids[1], bytes: null },
        { message_id: ids[2], bytes: 20 },
      ]);
      expect(none.map((r) => [r.message_id, r.body?.length ?? null])).toEqual([
        [ids[1], null],
        [ids[2], 20],
      ]);
    } finally {
      await pool.end();
      await db.drop();
    }
  });
});
