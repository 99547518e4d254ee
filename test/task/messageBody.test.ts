/** The stored message body's layout, cut and changed without parsing: its entities one by one, its transaction id. */
import { describe, expect, it } from "vitest";
import { Client } from "pg";
import { entitiesText, entityTexts, withTransactionId } from "../../task/mapping/messageBody";
import { MESSAGE_STATUS } from "../../task/warehouse/messageStatus";
import { loadClientRunTables } from "../../templates";
import { createTestDatabase } from "../support/database";

describe("message bodies", () => {
  it("entityTexts splits at the commas between entities only, whatever their strings hold", () => {
    const entities = [
      { UserId: "E1", FirstName: 'A, "quoted" {name}', UserAddress: [{ AddressLine1: "1, Main [St]" }, { AddressLine1: "\\,}" }] },
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
    expect(check![1].split(",").map((s) => s.trim().replace(/'/g, "")).sort()).toEqual(Object.values(MESSAGE_STATUS).sort());
  });
});
