import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { QUEUE_API, authorizeResponseSchema, publishResultSchema } from "../../core/hubContract";
import { startEmulator, type Emulator } from "../../emulator";
import { DEV_QUEUES, authorize, authorizeRaw, message, messagesUrl, put } from "./helpers";

describe("queue broker", () => {
  let em: Emulator;
  let token: string;

  beforeAll(async () => {
    em = await startEmulator({
      config: {
        rejectDestinations: ["closed-queue"],
        queues: { APAC: { ...DEV_QUEUES.APAC, destinations: ["only-this"] } },
      },
    });
  });
  afterAll(() => em.close());
  beforeEach(async () => {
    em.reset();
    token = await authorize(em);
  });

  const stored = (queue: string, region: "US" | "EU" | "APAC" = "US") =>
    em.state({ messages: true }).queues[region].destinations[queue];

  describe("authorize", () => {
    it("answers a token and the region's org and environment for the configured client", async () => {
      const a = await authorizeRaw(em, "EU", {
        client_id: DEV_QUEUES.EU.clientId,
        client_secret: DEV_QUEUES.EU.clientSecret,
        grant_type: "client_credentials",
      });
      expect(a.status).toBe(200);
      const body = authorizeResponseSchema.parse(a.json);
      expect(body.simple_client).toEqual({ orgId: DEV_QUEUES.EU.orgId, envId: DEV_QUEUES.EU.envId });
      expect(body.token_type).toBe("bearer");
      expect(Object.keys(a.json).sort()).toEqual(["access_token", "simple_client", "token_type"]);
    });

    it.each([
      [
        "a wrong secret",
        { client_id: DEV_QUEUES.US.clientId, client_secret: "wrong", grant_type: "client_credentials" },
      ],
      [
        "a wrong client id",
        { client_id: "someone", client_secret: DEV_QUEUES.US.clientSecret, grant_type: "client_credentials" },
      ],
      [
        "another region's credentials",
        {
          client_id: DEV_QUEUES.EU.clientId,
          client_secret: DEV_QUEUES.EU.clientSecret,
          grant_type: "client_credentials",
        },
      ],
      [
        "another grant type",
        { client_id: DEV_QUEUES.US.clientId, client_secret: DEV_QUEUES.US.clientSecret, grant_type: "password" },
      ],
      ["no secret", { client_id: DEV_QUEUES.US.clientId, grant_type: "client_credentials" }],
      ["an empty form", {}],
    ])("refuses %s with 401 and no token", async (_, form) => {
      const a = await authorizeRaw(em, "US", form);
      expect(a.status).toBe(401);
      expect(a.json.access_token).toBeUndefined();
    });

    it("wants a form, not JSON (415)", async () => {
      const a = await authorizeRaw(
        em,
        "US",
        {
          client_id: DEV_QUEUES.US.clientId,
          client_secret: DEV_QUEUES.US.clientSecret,
          grant_type: "client_credentials",
        },
        "application/json",
      );
      expect(a.status).toBe(415);
    });

    it("answers 405 to GET", async () => {
      const res = await fetch(`${em.urls.queues.US}/api/v1/authorize`);
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
    });
  });

  describe("single publish", () => {
    it("stores the message and answers 201 successful", async () => {
      const a = await put(`${messagesUrl(em, "q1")}/m-1`, token, message("m-1", "hello"));
      expect(a.status).toBe(201);
      expect(publishResultSchema.parse(a.json)).toEqual({
        messageId: "m-1",
        status: "successful",
        statusMessage: "queued",
      });
      const dest = stored("q1");
      expect(dest.count).toBe(1);
      expect(dest.messages).toEqual([
        { messageId: "m-1", bytes: 5, deliveries: 1, properties: message("m-1").properties, body: "hello" },
      ]);
    });

    it("takes a messageId that needs percent-encoding in the path", async () => {
      const id = "run 1/msg#7";
      const a = await put(`${messagesUrl(em, "q1")}/${encodeURIComponent(id)}`, token, message(id));
      expect(a.status).toBe(201);
      expect(stored("q1").messages!.map((m) => m.messageId)).toEqual([id]);
    });

    it("refuses a path messageId that differs from headers.messageId (400)", async () => {
      const a = await put(`${messagesUrl(em, "q1")}/m-1`, token, message("m-2"));
      expect(a.status).toBe(400);
      expect(a.json.message).toMatch(/messageId/);
      expect(stored("q1")).toBeUndefined();
    });

    it("refuses a single message whose body is an array (400)", async () => {
      const a = await put(`${messagesUrl(em, "q1")}/m-1`, token, [message("m-1")]);
      expect(a.status).toBe(400);
    });
  });

  describe("batch publish", () => {
    it("stores 1 to 10 messages and answers one result per message, in order", async () => {
      const ids = Array.from({ length: QUEUE_API.maxBatchSize }, (_, i) => `b-${i}`);
      const a = await put(
        messagesUrl(em, "q1"),
        token,
        ids.map((id) => message(id)),
      );
      expect(a.status).toBe(201);
      expect(a.json).toHaveLength(10);
      expect(a.json.map((r: unknown) => publishResultSchema.parse(r).messageId)).toEqual(ids);
      expect(a.json.every((r: { status: string }) => r.status === "successful")).toBe(true);
      expect(stored("q1").count).toBe(10);
    });

    it.each([
      ["an empty batch", []],
      ["a batch of 11", Array.from({ length: 11 }, (_, i) => message(`x-${i}`))],
      ["a message without headers.messageId", [message("ok-1"), { properties: {}, headers: {}, body: "x" }]],
      ["an empty messageId", [{ ...message("x"), headers: { messageId: "" } }]],
      ["a non-string property", [{ ...message("x"), properties: { recordCount: 1 } }]],
      ["a body that is not a string", [{ ...message("x"), body: { a: 1 } }]],
      ["an object instead of an array", message("x")],
      ["the same messageId twice", [message("twice"), message("twice")]],
    ])("refuses %s with 400 and stores nothing", async (_, body) => {
      const a = await put(messagesUrl(em, "q1"), token, body);
      expect(a.status).toBe(400);
      expect(a.json.error).toBe("Bad Request");
      expect(stored("q1")).toBeUndefined();
    });

    it("refuses malformed JSON (400)", async () => {
      const a = await put(messagesUrl(em, "q1"), token, '[{"properties": {}, ');
      expect(a.status).toBe(400);
      expect(a.json.message).toMatch(/not valid JSON/);
    });

    it("refuses a body that is not JSON by its Content-Type (415)", async () => {
      const a = await put(messagesUrl(em, "q1"), token, JSON.stringify([message("x")]), {
        "content-type": "text/plain",
      });
      expect(a.status).toBe(415);
    });

    it("answers 405 to other methods", async () => {
      const res = await fetch(messagesUrl(em, "q1"), { method: "POST", headers: { authorization: `bearer ${token}` } });
      expect(res.status).toBe(405);
    });
  });

  describe("body size limit", () => {
    const oversized = () => JSON.stringify([message("big", "x".repeat(QUEUE_API.maxBodyBytes))]);

    it("answers 413 to a body over 10 MB with a Content-Length, and keeps serving", async () => {
      const a = await put(messagesUrl(em, "q1"), token, oversized());
      expect(a.status).toBe(413);
      expect(stored("q1")).toBeUndefined();
      expect((await put(messagesUrl(em, "q1"), token, [message("after")])).status).toBe(201);
    });

    it("answers 413 to a chunked body once it passes 10 MB", async () => {
      const text = oversized();
      const stream = new Blob([text]).stream();
      const res = await fetch(messagesUrl(em, "q1"), {
        method: "PUT",
        headers: { authorization: `bearer ${token}`, "content-type": "application/json" },
        body: stream,
        duplex: "half",
      });
      expect(res.status).toBe(413);
      expect(stored("q1")).toBeUndefined();
    });

    it("accepts a body just under the limit", async () => {
      const overhead = JSON.stringify([message("near", "")]).length;
      const a = await put(messagesUrl(em, "q1"), token, [
        message("near", "y".repeat(QUEUE_API.maxBodyBytes - overhead)),
      ]);
      expect(a.status).toBe(201);
      expect(stored("q1").bytes).toBe(QUEUE_API.maxBodyBytes - overhead);
    });
  });

  describe("paths and tokens", () => {
    it.each([
      ["an unknown organization", () => messagesUrl(em, "q1", "US", { orgId: "other-org" })],
      ["an unknown environment", () => messagesUrl(em, "q1", "US", { envId: "other-env" })],
      [
        "another region's organization",
        () => messagesUrl(em, "q1", "US", { orgId: DEV_QUEUES.EU.orgId, envId: DEV_QUEUES.EU.envId }),
      ],
      ["an invalid queue name", () => messagesUrl(em, "bad name!")],
    ])("answers 404 to %s", async (_, url) => {
      const a = await put(url(), token, [message("x")]);
      expect(a.status).toBe(404);
    });

    it("answers 404 to an unknown region and to paths outside the API", async () => {
      const paths = [
        "/mq/latam/api/v1/authorize",
        "/mq/us/api/v2/authorize",
        "/mq/us/api/v1/organizations/dev-org-us",
        "/nothing",
      ];
      // Segments that name Object.prototype members must not reach a handler table's prototype.
      paths.push("/_emulator/constructor", "/__proto__/api/toString", "/cfg/api/hasOwnProperty");
      for (const path of paths) {
        const res = await fetch(`${em.urls.base}${path}`, { method: "POST" });
        expect(res.status, path).toBe(404);
      }
    });

    it("answers 404 to a destination outside a region's configured list", async () => {
      const apac = await authorize(em, "APAC");
      expect((await put(messagesUrl(em, "other", "APAC"), apac, [message("x")])).status).toBe(404);
      expect((await put(messagesUrl(em, "only-this", "APAC"), apac, [message("x")])).status).toBe(201);
    });

    it.each([
      ["no token", undefined, {}],
      ["an unknown token", "not-a-token", {}],
      ["a Basic header", undefined, { authorization: "Basic abc==" }],
    ])("answers 401 to %s", async (_, t, headers) => {
      const a = await put(messagesUrl(em, "q1"), t, [message("x")], headers);
      expect(a.status).toBe(401);
      expect(stored("q1")).toBeUndefined();
    });

    it("answers 401 to a token of another region", async () => {
      const eu = await authorize(em, "EU");
      expect((await put(messagesUrl(em, "q1", "US"), eu, [message("x")])).status).toBe(401);
      expect((await put(messagesUrl(em, "q1", "EU"), eu, [message("x")])).status).toBe(201);
    });
  });

  describe("duplicates (a standard, at-least-once queue)", () => {
    it("stores a republished messageId again and counts it as a duplicate delivery", async () => {
      expect((await put(messagesUrl(em, "q1"), token, [message("d-1", "first"), message("d-2")])).status).toBe(201);
      const again = await put(messagesUrl(em, "q1"), token, [message("d-1", "first"), message("d-3")]);
      expect(again.status).toBe(201);
      expect(again.json).toEqual([
        { messageId: "d-1", status: "successful", statusMessage: "queued" },
        { messageId: "d-3", status: "successful", statusMessage: "queued" },
      ]);
      const single = await put(`${messagesUrl(em, "q1")}/d-2`, token, message("d-2"));
      expect(single.status).toBe(201);
      const dest = stored("q1");
      expect(dest).toMatchObject({ count: 5, distinct: 3, duplicates: 2 });
      expect(dest.messages!.map((m) => [m.messageId, m.deliveries])).toEqual([
        ["d-1", 2],
        ["d-2", 2],
        ["d-3", 1],
      ]);
    });

    it("counts per destination: the same messageId in another queue is a new message", async () => {
      await put(messagesUrl(em, "q1"), token, [message("same")]);
      await put(messagesUrl(em, "q2"), token, [message("same")]);
      expect(stored("q1")).toMatchObject({ count: 1, distinct: 1, duplicates: 0 });
      expect(stored("q2")).toMatchObject({ count: 1, distinct: 1, duplicates: 0 });
    });
  });

  describe("a destination that rejects permanently", () => {
    it("fails every message of a batch and stores none", async () => {
      const a = await put(messagesUrl(em, "closed-queue"), token, [message("r-1"), message("r-2")]);
      expect(a.status).toBe(201);
      expect(a.json).toEqual([
        { messageId: "r-1", status: "failed", statusMessage: "destination rejects messages" },
        { messageId: "r-2", status: "failed", statusMessage: "destination rejects messages" },
      ]);
      expect(stored("closed-queue")).toMatchObject({ count: 0, rejected: 2 });
    });

    it("answers a single message with 403 and a failed result", async () => {
      const a = await put(`${messagesUrl(em, "closed-queue")}/r-3`, token, message("r-3"));
      expect(a.status).toBe(403);
      expect(a.json).toMatchObject({ messageId: "r-3", status: "failed" });
    });
  });
});

describe("queue broker with deduplication", () => {
  it("keeps the first publish of a messageId and only counts the republish", async () => {
    const em = await startEmulator({ config: { deduplicate: true } });
    try {
      const token = await authorize(em);
      await put(messagesUrl(em, "q"), token, [message("d-1", "first")]);
      const again = await put(messagesUrl(em, "q"), token, [message("d-1", "second")]);
      expect(again.json[0]).toEqual({
        messageId: "d-1",
        status: "successful",
        statusMessage: "duplicate messageId; already stored",
      });
      const dest = em.state({ messages: true }).queues.US.destinations.q;
      expect(dest).toMatchObject({ count: 1, distinct: 1, duplicates: 1 });
      expect(dest.messages).toMatchObject([{ messageId: "d-1", bytes: 5, deliveries: 1, body: "first" }]);
    } finally {
      await em.close();
    }
  });
});

describe("queue broker without retained bodies", () => {
  it("stores only sizes and delivery counts", async () => {
    const em = await startEmulator({ config: { retainBodies: false } });
    try {
      const token = await authorize(em);
      await put(messagesUrl(em, "q"), token, [message("a", "12345"), message("b", "é")]);
      await put(messagesUrl(em, "q"), token, [message("a", "12345")]);
      const dest = em.state({ messages: true }).queues.US.destinations.q;
      expect(dest).toMatchObject({ count: 3, distinct: 2, duplicates: 1, bytes: 12 });
      expect(dest.messages).toEqual([
        { messageId: "a", bytes: 5, deliveries: 2 },
        { messageId: "b", bytes: 2, deliveries: 1 },
      ]);
    } finally {
      await em.close();
    }
  });
});

describe("token lifetime", () => {
  // A controlled clock: the broker's tokens age only when the test moves it on.
  beforeEach(() => vi.useFakeTimers({ toFake: ["Date"] }));
  afterEach(() => vi.useRealTimers());
  const sleep = (ms: number) => vi.setSystemTime(Date.now() + ms);

  it("expires an unused token after the TTL (401), and a new authorization works", async () => {
    const em = await startEmulator({ config: { tokenTtlSeconds: 0.3 } });
    try {
      const token = await authorize(em);
      expect((await put(messagesUrl(em, "q"), token, [message("t-1")])).status).toBe(201);
      sleep(450);
      const expired = await put(messagesUrl(em, "q"), token, [message("t-2")]);
      expect(expired.status).toBe(401);
      expect(expired.json.message).toMatch(/expired/);
      const fresh = await authorize(em);
      expect(fresh).not.toBe(token);
      expect((await put(messagesUrl(em, "q"), fresh, [message("t-2")])).status).toBe(201);
      expect(em.state().queues.US.destinations.q.count).toBe(2);
    } finally {
      await em.close();
    }
  });

  it("extends a token on each use", async () => {
    const em = await startEmulator({ config: { tokenTtlSeconds: 0.4 } });
    try {
      const token = await authorize(em);
      // Six uses 150 ms apart: 0.9 s in all, more than twice the TTL, yet never 0.4 s unused.
      for (let i = 0; i < 6; i++) {
        expect((await put(messagesUrl(em, "q"), token, [message(`e-${i}`)])).status, `use ${i}`).toBe(201);
        sleep(150);
      }
    } finally {
      await em.close();
    }
  });
});
