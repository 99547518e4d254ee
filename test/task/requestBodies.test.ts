import { describe, expect, it } from "vitest";
import { jsonArrayBody, utf8Body } from "../../task/http/utf8Body";
import { ersRequestBody } from "../../task/phases/ersStream";
import { Lane, outgoing, propertiesJson } from "../../task/phases/publish";
import type { StoredMessage } from "../../task/warehouse/archive";
import { HUB_CONTRACT_DEFAULTS, QUEUE_API } from "../../core/hubContract";
import type { QueueBroker, MessageOutcome } from "../../task/queue/broker";
import type { Link } from "../../task/http/concurrency";

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
    const body = ersRequestBody("tx-1", "HRSYS", [
      '{"UserId":"E1","LastName":"Müller"}',
      '{"UserId":"E2"},{"UserId":"E3"}',
    ]);
    const parsed = JSON.parse(body.toString("utf8"));
    expect(parsed.transactionId).toBe("tx-1");
    expect(parsed.systemCode).toBe("HRSYS");
    expect(parsed.entities.map((e: { UserId: string }) => e.UserId)).toEqual(["E1", "E2", "E3"]);
    expect(parsed.entities[0].LastName).toBe("Müller");
    expect(JSON.parse(ersRequestBody("tx-2", "HRSYS", []).toString("utf8")).entities).toEqual([]);
  });
});

describe("a queue message as the broker takes it", () => {
  const message: StoredMessage = {
    transactionId: "4bd90d87-780c-4d14-b6a7-e270df4d49bc",
    seq: "7",
    messageId: "4bd90d87-780c-4d14-b6a7-e2700000000007",
    tenantId: "3f6c9a2e-5b1d-4e8f-9a7c-2d4b6e8f0a1c",
    destination: "acme-empl-us",
    recordCount: 2,
    body: '{"header":{"recordCount":2},"entities":[{"UserId":"E1","LastName":"Müller \\"Jr\\""},{"UserId":"E2","City":"東京 🙂"}]}',
  };

  it("carries the body as a JSON string, byte for byte, multi-byte characters included", () => {
    const out = outgoing(message, propertiesJson(message, "HRSYS", HUB_CONTRACT_DEFAULTS.queueMessage));
    const parsed = JSON.parse(out.json.toString("utf8"));
    expect(parsed.body).toBe(message.body);
    expect(parsed.headers).toEqual({ messageId: message.messageId });
    expect(parsed.properties).toMatchObject({
      transactionId: message.transactionId,
      tenantId: message.tenantId,
      systemCode: "HRSYS",
      recordCount: "2",
    });
    expect(out.json.length).toBe(Buffer.byteLength(JSON.stringify(parsed)));
  });

  it("has the hub contract's property names, and none when the contract disables them", () => {
    const names = { ...HUB_CONTRACT_DEFAULTS.queueMessage.names, tenantId: "hubTenant", recordCount: "count" };
    const renamed = JSON.parse(
      outgoing(
        message,
        propertiesJson(message, "HRSYS", { ...HUB_CONTRACT_DEFAULTS.queueMessage, names }),
      ).json.toString("utf8"),
    );
    expect(renamed.properties.hubTenant).toBe(message.tenantId);
    expect(renamed.properties.count).toBe("2");
    expect(renamed.properties.tenantId).toBeUndefined();
    const none = JSON.parse(
      outgoing(
        message,
        propertiesJson(message, "HRSYS", { ...HUB_CONTRACT_DEFAULTS.queueMessage, enabled: false }),
      ).json.toString("utf8"),
    );
    expect(none.properties).toEqual({});
    expect(none.body).toBe(message.body);
  });
});

describe("a lane's batches", () => {
  const stored = (i: number, chars: number): StoredMessage => ({
    transactionId: "t",
    seq: String(i),
    messageId: `m-${i}`,
    tenantId: "x",
    destination: "q",
    recordCount: 1,
    body: "é".repeat(chars),
  });
  // Batching uses neither the broker nor the link.
  const lane = () => new Lane({} as QueueBroker, {} as Link);

  it("keeps each body under the broker's limit, builds each message once, and refuses one over the limit alone", () => {
    const l = lane();
    // "é" is 2 bytes: three of these fit in one body, a fourth does not; one is over the limit by itself.
    const third = Math.floor(QUEUE_API.maxBodyBytes / 3 / 2) - 200;
    l.waiting.push(
      stored(1, third),
      stored(2, third),
      stored(3, third),
      stored(4, third),
      stored(5, QUEUE_API.maxBodyBytes),
      stored(6, 10),
    );
    const built: string[] = [];
    const refused: MessageOutcome[] = [];
    const build = (m: StoredMessage) => (
      built.push(m.messageId),
      outgoing(m, propertiesJson(m, "HRSYS", HUB_CONTRACT_DEFAULTS.queueMessage))
    );
    const first = l.nextBatch(build, (_, outcome) => refused.push(outcome));
    expect(first.batch.map((p) => p.message.messageId)).toEqual(["m-1", "m-2", "m-3"]);
    expect(first.bytes).toBe(2 + first.batch.reduce((n, p) => n + p.out.json.length + 1, 0));
    expect(first.bytes).toBeLessThanOrEqual(QUEUE_API.maxBodyBytes + 1);
    const second = l.nextBatch(build, (_, outcome) => refused.push(outcome));
    expect(second.batch.map((p) => p.message.messageId)).toEqual(["m-4", "m-6"]);
    expect(refused).toEqual([
      expect.objectContaining({
        messageId: "m-5",
        published: false,
        reason: expect.stringMatching(/exceeds the broker's limit/),
      }),
    ]);
    // m-4 did not fit in the first batch: its JSON was kept, not built again.
    expect(built).toEqual(["m-1", "m-2", "m-3", "m-4", "m-5", "m-6"]);
    expect(l.size).toBe(0);
  });
});
