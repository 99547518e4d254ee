import { describe, expect, it } from "vitest";
import { jsonArrayBody, utf8Body } from "../../task/http/utf8Body";
import { ersRequestBody } from "../../task/phases/ers";

describe("request bodies written as UTF-8 from their pieces", () => {
  it("utf8Body is the pieces' text, multi-byte characters included", () => {
    const pieces = ['{"name":', JSON.stringify("Müller “García” 東京 🙂"), "}"];
    const body = utf8Body(pieces);
    expect(body.length).toBe(Buffer.byteLength(pieces.join("")));
    expect(JSON.parse(body.toString("utf8"))).toEqual({ name: "Müller “García” 東京 🙂" });
    expect(utf8Body([]).length).toBe(0);
  });

  it("jsonArrayBody joins encoded JSON texts into an array", () => {
    const items = [{ a: "é" }, { b: 2 }, { c: [1, "ß"] }].map((x) => Buffer.from(JSON.stringify(x)));
    expect(JSON.parse(jsonArrayBody(items).toString("utf8"))).toEqual([{ a: "é" }, { b: 2 }, { c: [1, "ß"] }]);
    expect(jsonArrayBody([items[1]]).toString("utf8")).toBe('[{"b":2}]');
    expect(jsonArrayBody([]).toString("utf8")).toBe("[]");
  });

  it("an ERS request holds every entity of its pieces, a piece holding one or several", () => {
    const body = ersRequestBody("tx-1", "HRSYS", ['{"UserId":"E1","LastName":"Müller"}', '{"UserId":"E2"},{"UserId":"E3"}']);
    const parsed = JSON.parse(body.toString("utf8"));
    expect(parsed.transactionId).toBe("tx-1");
    expect(parsed.systemCode).toBe("HRSYS");
    expect(parsed.entities.map((e: { UserId: string }) => e.UserId)).toEqual(["E1", "E2", "E3"]);
    expect(parsed.entities[0].LastName).toBe("Müller");
    expect(JSON.parse(ersRequestBody("tx-2", "HRSYS", []).toString("utf8")).entities).toEqual([]);
  });
});
