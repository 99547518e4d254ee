import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { basicAuthorization } from "../../core/hubContract";
import { defaultRoutingRules } from "../../core/routingRules";
import { startEmulator, type Emulator } from "../../emulator";
import { DEV_TENANTS, TENANT_EU, TENANT_US, devCredentialsString, hubCall } from "./helpers";

const entities = (n: number) => Array.from({ length: n }, (_, i) => ({ UserId: `E${i}`, Status: "ACTV" }));
const ersBody = (n: number, transactionId = "tx-1") => ({
  transactionId,
  systemCode: "HRSYS",
  dataDomainCode: "EMPL",
  entityName: "User",
  entities: entities(n),
});
const intakeJob = (status = "COMPLETED") => ({
  jobName: "HRSYS_EMPL_HUB_ACME_202611_QA",
  transactionId: "tx-1",
  systemCode: "HRSYS",
  dataDomainCode: "EMPL",
  status,
  counts: { extracted: 3, published: 3, failed: 0 },
});

describe("hub APIs", () => {
  let em: Emulator;
  beforeAll(async () => {
    em = await startEmulator({ config: { ersMaxBatch: 100 } });
  });
  afterAll(() => em.close());
  beforeEach(() => em.reset());

  describe("cfg routingRules", () => {
    it("stores the specification's rule set for the tenant and returns it on GET", async () => {
      const post = await hubCall(em, "CFG", { body: defaultRoutingRules() });
      expect(post.status).toBe(200);
      expect(post.json).toEqual({ tenantId: TENANT_US, inserted: 8, updated: 0, unchanged: 0, total: 8 });
      const get = await hubCall(em, "CFG", { method: "GET" });
      expect(get.status).toBe(200);
      expect(get.json).toEqual(defaultRoutingRules());
      expect(em.state().routingRules).toEqual({ [TENANT_US]: { rules: defaultRoutingRules(), posts: 1, changes: 8 } });
    });

    it("stores nothing new when the same set is posted again", async () => {
      await hubCall(em, "CFG", { body: defaultRoutingRules() });
      const again = await hubCall(em, "CFG", { body: defaultRoutingRules() });
      expect(again.status).toBe(200);
      expect(again.json).toMatchObject({ inserted: 0, updated: 0, unchanged: 8, total: 8 });
      expect(em.state().routingRules[TENANT_US]).toMatchObject({ posts: 2, changes: 8 });
    });

    it("merges: a changed status updates its row, a new rule is added, absent rules stay", async () => {
      await hubCall(em, "CFG", { body: defaultRoutingRules().slice(0, 4) });
      const [first] = defaultRoutingRules();
      const post = await hubCall(em, "CFG", { body: [{ ...first, status: 1 }, defaultRoutingRules()[4]] });
      expect(post.json).toMatchObject({ inserted: 1, updated: 1, unchanged: 0, total: 5 });
      const rules = em.state().routingRules[TENANT_US].rules;
      expect(rules).toHaveLength(5);
      expect(rules[0]).toEqual({ ...first, status: 1 });
    });

    it("keeps each tenant's rules apart", async () => {
      await hubCall(em, "CFG", { body: defaultRoutingRules() });
      const eu = await hubCall(em, "CFG", { tenantId: TENANT_EU, credentials: DEV_TENANTS[TENANT_EU], method: "GET" });
      expect(eu.status).toBe(200);
      expect(eu.json).toEqual([]);
    });

    it.each([
      // Codes and integers of the right shape, whatever their value (other data flows use other codes).
      ["a status that is not an integer", [{ ...defaultRoutingRules()[0], status: 0.5 }], /status: must be an integer/],
      [
        "a source role that is not a code",
        [{ ...defaultRoutingRules()[0], systemRoleCodeSource: "crm role" }],
        /systemRoleCodeSource/,
      ],
      [
        "a target role that is not a code",
        [{ ...defaultRoutingRules()[0], systemRoleCodeTarget: "" }],
        /systemRoleCodeTarget/,
      ],
      ["isDataMastered as a string", [{ ...defaultRoutingRules()[0], isDataMastered: "0" }], /isDataMastered/],
      ["a data domain that is not a code", [{ ...defaultRoutingRules()[0], dataDomainCode: "empl" }], /dataDomainCode/],
      ["a missing field", [(({ status: _s, ...rest }) => rest)(defaultRoutingRules()[0])], /status/],
      ["an extra field", [{ ...defaultRoutingRules()[0], priority: 1 }], /priority/],
      ["an empty set", [], /body/],
      ["an object instead of an array", defaultRoutingRules()[0], /body/],
      ["the same rule twice", [defaultRoutingRules()[0], { ...defaultRoutingRules()[0], status: 1 }], /twice/],
    ])("refuses %s with 400 and stores nothing", async (_, body, message) => {
      const a = await hubCall(em, "CFG", { body });
      expect(a.status).toBe(400);
      expect(a.json.message).toMatch(message);
      expect(em.state().routingRules).toEqual({});
    });

    it("refuses malformed JSON (400) and a non-JSON Content-Type (415)", async () => {
      expect((await hubCall(em, "CFG", { body: "[{" })).status).toBe(400);
      expect(
        (await hubCall(em, "CFG", { body: JSON.stringify(defaultRoutingRules()), contentType: "text/plain" })).status,
      ).toBe(415);
    });
  });

  describe("authentication", () => {
    it.each([
      ["a wrong secret", { credentials: { ...DEV_TENANTS[TENANT_US], clientSecret: "wrong" } }],
      ["a wrong client id", { credentials: { ...DEV_TENANTS[TENANT_US], clientId: "wrong" } }],
      ["another tenant's credentials", { credentials: DEV_TENANTS[TENANT_EU] }],
      ["no Authorization header", { authorization: null }],
      ["a value that is not a credentials string", { authorization: "Basic not-base64!==" }],
      [
        "a credentials string without its == suffix",
        { authorization: basicAuthorization(devCredentialsString(TENANT_US).slice(0, -2)) },
      ],
      [
        "standard Basic user:password",
        { authorization: `Basic ${Buffer.from("dev-tenant-us:dev-tenant-us-secret").toString("base64")}` },
      ],
      ["a bearer token", { authorization: "Bearer abc" }],
      ["an unknown tenant", { tenantId: "99999999-9999-4999-8999-999999999999" }],
    ])("answers 401 to %s, and stores nothing", async (_, opts) => {
      for (const api of ["CFG", "ERS", "HRSYS"] as const) {
        const body = api === "CFG" ? defaultRoutingRules() : api === "ERS" ? ersBody(1) : intakeJob();
        const a = await hubCall(em, api, { ...opts, body });
        expect(a.status, api).toBe(401);
        expect(a.json.message).not.toMatch(/dev-tenant/);
      }
      const s = em.state();
      expect([s.routingRules, s.ers, s.intakeJobs]).toEqual([{}, {}, []]);
    });

    it("challenges with WWW-Authenticate: Basic", async () => {
      const res = await fetch(`${em.urls.cfg}routingRules?tenantId=${TENANT_US}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "[]",
      });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Basic/);
    });

    it.each([
      ["no tenantId", { tenantId: null }],
      ["an empty tenantId", { rawQuery: "?tenantId=" }],
      ["a tenantId that is not a UUID", { tenantId: "acme" }],
      ["two tenantIds", { rawQuery: `?tenantId=${TENANT_US}&tenantId=${TENANT_EU}` }],
    ])("answers 400 to %s", async (_, opts) => {
      const a = await hubCall(em, "CFG", { ...opts, body: defaultRoutingRules() });
      expect(a.status).toBe(400);
      expect(a.json.message).toMatch(/tenantId/);
    });

    it("compares tenant ids case-insensitively", async () => {
      const a = await hubCall(em, "CFG", { tenantId: TENANT_US.toUpperCase(), body: defaultRoutingRules() });
      expect(a.status).toBe(200);
      expect(Object.keys(em.state().routingRules)).toEqual([TENANT_US]);
    });

    it("answers 404 to unknown API paths and 405 to wrong methods", async () => {
      expect((await fetch(`${em.urls.cfg}wrapperData?tenantId=${TENANT_US}`, { method: "POST" })).status).toBe(404);
      expect((await fetch(`${em.urls.base}/cfg/routingRules`, { method: "POST" })).status).toBe(404);
      const wrong = await fetch(`${em.urls.ers}entities?tenantId=${TENANT_US}`, { method: "GET" });
      expect(wrong.status).toBe(405);
      expect(wrong.headers.get("allow")).toBe("POST");
    });
  });

  describe("ERS entities", () => {
    it("accepts up to the batch limit and counts entities per tenant and transaction", async () => {
      const a = await hubCall(em, "ERS", { body: ersBody(100, "tx-a") });
      expect(a.status).toBe(200);
      expect(a.json).toEqual({ transactionId: "tx-a", accepted: 100 });
      await hubCall(em, "ERS", { body: ersBody(7, "tx-a") });
      await hubCall(em, "ERS", { body: ersBody(3, "tx-b") });
      await hubCall(em, "ERS", { tenantId: TENANT_EU, credentials: DEV_TENANTS[TENANT_EU], body: ersBody(2, "tx-e") });
      expect(em.state().ers).toEqual({
        // E0..E6 of tx-a arrived twice: re-sent entities, found by their UserId.
        [TENANT_US]: { requests: 3, entities: 110, duplicates: 7, transactions: { "tx-a": 107, "tx-b": 3 } },
        [TENANT_EU]: { requests: 1, entities: 2, duplicates: 0, transactions: { "tx-e": 2 } },
      });
    });

    it("refuses a batch over the limit with 413", async () => {
      const a = await hubCall(em, "ERS", { body: ersBody(101) });
      expect(a.status).toBe(413);
      expect(a.json.message).toMatch(/at most 100/);
      expect(em.state().ers).toEqual({});
    });

    it("uses the configured limit", async () => {
      const small = await startEmulator({ config: { ersMaxBatch: 5 } });
      try {
        expect((await hubCall(small, "ERS", { body: ersBody(5) })).status).toBe(200);
        expect((await hubCall(small, "ERS", { body: ersBody(6) })).status).toBe(413);
      } finally {
        await small.close();
      }
    });

    it.each([
      ["another entity name", { ...ersBody(1), entityName: "Customer" }],
      ["no entities", ersBody(0)],
      ["a missing transactionId", (({ transactionId: _t, ...rest }) => rest)(ersBody(1))],
      ["an extra key", { ...ersBody(1), extra: true }],
      ["entities that are not objects", { ...ersBody(1), entities: ["E1"] }],
    ])("refuses %s with 400", async (_, body) => {
      const a = await hubCall(em, "ERS", { body });
      expect(a.status).toBe(400);
      expect(em.state().ers).toEqual({});
    });
  });

  describe("HRSYS intakeJobs", () => {
    it("records the job report with its tenant", async () => {
      const a = await hubCall(em, "HRSYS", { body: intakeJob("STARTED") });
      expect(a.status).toBe(201);
      expect(a.json).toEqual({
        tenantId: TENANT_US,
        jobName: intakeJob().jobName,
        transactionId: "tx-1",
        status: "STARTED",
      });
      await hubCall(em, "HRSYS", { body: intakeJob("COMPLETED") });
      const jobs = em.state().intakeJobs;
      expect(jobs.map((j) => j.status)).toEqual(["STARTED", "COMPLETED"]);
      expect(jobs[1]).toMatchObject({ ...intakeJob("COMPLETED"), tenantId: TENANT_US });
      expect(Number.isNaN(Date.parse(jobs[1].receivedAt))).toBe(false);
    });

    it.each([
      ["an unknown status", intakeJob("DONE")],
      ["a negative count", { ...intakeJob(), counts: { published: -1 } }],
      ["a fractional count", { ...intakeJob(), counts: { published: 1.5 } }],
      ["a missing jobName", (({ jobName: _j, ...rest }) => rest)(intakeJob())],
    ])("refuses %s with 400", async (_, body) => {
      const a = await hubCall(em, "HRSYS", { body });
      expect(a.status).toBe(400);
      expect(em.state().intakeJobs).toEqual([]);
    });
  });
});

describe("a hub that lacks the assumed endpoints", () => {
  it("answers 404 on the missing ERS and HRSYS paths and serves the cfg API", async () => {
    const em = await startEmulator({
      config: { missingEndpoints: ["ers.entities", "hrsys.intakeJobs"] },
      faults: "*:503=1",
    });
    try {
      const ers = await hubCall(em, "ERS", { body: ersBody(1) });
      const hrsys = await hubCall(em, "HRSYS", { body: intakeJob() });
      // 404 before any fault is drawn: the path does not exist, like an unknown one.
      expect([ers.status, hrsys.status]).toEqual([404, 404]);
      em.setFaults("none");
      expect((await hubCall(em, "CFG", { body: defaultRoutingRules() })).status).toBe(200);
      expect(em.state()).toMatchObject({ ers: {}, intakeJobs: [] });
      expect(em.state().faults.stats["ers.entities"].requests).toBe(0);
    } finally {
      await em.close();
    }
  });

  it("refuses an unknown endpoint name in its config", async () => {
    await expect(startEmulator({ config: { missingEndpoints: ["ers.nothing" as never] } })).rejects.toThrow(
      /missingEndpoints\[0\]: must be one of cfg.routingRules, ers.entities, hrsys.intakeJobs/,
    );
  });
});
