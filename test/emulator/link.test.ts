import { afterEach, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../emulator";
import { LinkEmulator, parseLatencySpec, parseRateLimitSpec, resolveLinkSettings } from "../../emulator/link";
import { DEV_TENANTS, TENANT_EU, TENANT_US, authorize, hubCall, message, messagesUrl, put } from "./helpers";

const ersBody = (n = 1) => ({
  transactionId: "7d1f3c4e-2b5a-4c6d-8e9f-0a1b2c3d4e5f",
  systemCode: "HRSYS",
  dataDomainCode: "EMPL",
  entityName: "User",
  entities: Array.from({ length: n }, (_, i) => ({ id: i })),
});
const batch = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => message(`${prefix}-${i}`));

describe("emulator link specs", () => {
  it("reads latency per API and region, with jitter written ± or +-", () => {
    expect(parseLatencySpec("queue=40ms±10, ers=80ms,queue.APAC=180+-30ms,*=5")).toEqual({
      queue: { fixedMs: 40, jitterMs: 10 },
      ers: { fixedMs: 80, jitterMs: 0 },
      "queue.APAC": { fixedMs: 180, jitterMs: 30 },
      "*": { fixedMs: 5, jitterMs: 0 },
    });
    expect(parseLatencySpec("none")).toEqual({});
  });

  it("reads rate limits with an optional bucket size (default a tenth of a second, at least one batch)", () => {
    expect(parseRateLimitSpec("queue=2000/s,ers.EU=50/s@5,hrsys=20/s")).toEqual({
      queue: { perSecond: 2000, burst: 200 },
      "ers.EU": { perSecond: 50, burst: 5 },
      hrsys: { perSecond: 20, burst: 10 },
    });
  });

  it.each([
    ["--latency", "queue=fast", /rule 1 \('queue=fast'\): expected whole milliseconds/],
    ["--latency", "queue=40ms±50", /the jitter \(50\) must not exceed the fixed latency \(40\)/],
    ["--latency", "mq=40ms", /unknown target 'mq'/],
    ["--latency", "queue.MARS=40ms", /unknown region 'MARS'/],
    ["--latency", "queue=1ms,queue=2ms", /rule 2 .*'queue' is given twice/],
    ["--rate-limit", "queue=2000", /expected a rate like 2000\/s/],
    ["--rate-limit", "queue=0/s", /the rate must be above 0/],
  ])("refuses %s %s with a line naming the rule", (option, spec, message) => {
    expect(() => (option === "--latency" ? parseLatencySpec(spec) : parseRateLimitSpec(spec))).toThrow(message);
  });

  it("draws the same jitter for the same seed, and other jitter for another seed", () => {
    const settings = resolveLinkSettings({ latency: "queue=40ms±10" });
    const draws = (seed: number) => {
      const links = new LinkEmulator(settings, seed);
      return Array.from({ length: 20 }, () => links.link("queue", "EU").roundTripMs());
    };
    const a = draws(7);
    expect(draws(7)).toEqual(a);
    expect(draws(8)).not.toEqual(a);
    for (const ms of a) {
      expect(ms).toBeGreaterThanOrEqual(30);
      expect(ms).toBeLessThanOrEqual(50);
    }
    // Each link has its own stream: the EU queue's draws do not depend on traffic to US.
    const mixed = new LinkEmulator(settings, 7);
    const eu = Array.from(
      { length: 20 },
      () => (mixed.link("queue", "US").roundTripMs(), mixed.link("queue", "EU").roundTripMs()),
    );
    expect(eu).toEqual(a);
  });

  it("a token bucket: bursts up to its size, then refills at the rate; a refused request takes nothing", () => {
    const clock = { t: 0 };
    const links = new LinkEmulator(resolveLinkSettings({ rateLimit: "queue=100/s@20" }), 1, () => clock.t);
    const link = links.link("queue", "US");
    link.admit(10, true);
    link.admit(10, true);
    expect(() => link.admit(10, true)).toThrow(
      expect.objectContaining({ status: 429, headers: { "retry-after": "1" } }),
    );
    clock.t += 50; // 5 tokens back
    expect(() => link.admit(10, false)).toThrow(expect.objectContaining({ status: 429, headers: {} }));
    clock.t += 50; // 10 tokens
    link.admit(10, true);
    const s = links.snapshot()["queue.US"];
    expect(s).toMatchObject({ throttled: 2, accepted: 30, limit: { perSecond: 100, burst: 20, unit: "messages" } });
  });
});

describe("emulator as a remote hub", () => {
  let em: Emulator | undefined;
  afterEach(async () => {
    await em?.close();
    em = undefined;
  });

  it("adds each link's round trip: the queue of one region, the ERS API of a tenant's region", async () => {
    em = await startEmulator({ link: { latency: "queue.EU=120ms,ers.US=150ms" } });
    const token = await authorize(em, "EU");
    let t = performance.now();
    expect((await put(messagesUrl(em, "q", "EU"), token, batch("eu", 2))).status).toBe(201);
    expect(performance.now() - t).toBeGreaterThanOrEqual(115);
    const usToken = await authorize(em, "US");
    expect((await put(messagesUrl(em, "q", "US"), usToken, batch("us", 2))).status).toBe(201);

    t = performance.now();
    expect((await hubCall(em, "ERS", { tenantId: TENANT_US, body: ersBody() })).status).toBe(200);
    expect(performance.now() - t).toBeGreaterThanOrEqual(145);
    expect(
      (await hubCall(em, "ERS", { tenantId: TENANT_EU, credentials: DEV_TENANTS[TENANT_EU], body: ersBody() })).status,
    ).toBe(200);
    // The other links have no latency of their own.
    const links = em.state().links;
    expect(links["queue.EU"].latency).toEqual({ fixedMs: 120, jitterMs: 0 });
    expect(links["ers.US"].latency).toEqual({ fixedMs: 150, jitterMs: 0 });
    expect(links["queue.US"].latency).toBeNull();
    expect(links["ers.EU"].latency).toBeNull();
  });

  it("over a queue's limit in messages/s: 429 with Retry-After, nothing stored; the state reports requests, 429s and rates", async () => {
    em = await startEmulator({ link: { rateLimit: "queue.US=20/s@20" } });
    const token = await authorize(em, "US");
    const url = messagesUrl(em, "limited", "US");
    expect((await put(url, token, batch("a", 10))).status).toBe(201);
    expect((await put(url, token, batch("b", 10))).status).toBe(201);
    const over = await fetch(url, {
      method: "PUT",
      headers: { "content-type": "application/json", authorization: `bearer ${token}` },
      body: JSON.stringify(batch("c", 10)),
    });
    expect(over.status).toBe(429);
    expect(over.headers.get("retry-after")).toBe("1");
    expect(await over.json()).toMatchObject({ error: "Too Many Requests" });
    // Another region has no limit.
    const eu = await authorize(em, "EU");
    for (let i = 0; i < 3; i++)
      expect((await put(messagesUrl(em, "open", "EU"), eu, batch(`eu${i}`, 10))).status).toBe(201);

    const state = em.state();
    expect(state.queues.US.destinations.limited.count).toBe(20);
    expect(state.links["queue.US"]).toMatchObject({
      requests: 3,
      throttled: 1,
      accepted: 20,
      limit: { perSecond: 20, burst: 20, unit: "messages" },
    });
    expect(state.links["queue.US"].achievedPerSecond).toBeGreaterThan(0);
    expect(state.links["queue.EU"]).toMatchObject({
      requests: 3,
      throttled: 0,
      accepted: 30,
      limit: null,
      fractionOfLimit: null,
    });
    // The same over HTTP, and a reset starts the buckets again.
    const viaHttp = (await (await fetch(em.urls.state)).json()) as typeof state;
    expect(viaHttp.links["queue.US"].throttled).toBe(1);
    em.reset();
    expect(em.state().links).toEqual({});
    expect((await put(url, token, batch("d", 10))).status).toBe(201);
  });

  it("answers 429 without Retry-After when told to", async () => {
    em = await startEmulator({ link: { rateLimit: "queue=10/s", retryAfter: false } });
    const token = await authorize(em, "US");
    const url = messagesUrl(em, "q", "US");
    expect((await put(url, token, batch("a", 10))).status).toBe(201);
    const over = await fetch(url, {
      method: "PUT",
      headers: { "content-type": "application/json", authorization: `bearer ${token}` },
      body: JSON.stringify(batch("b", 1)),
    });
    expect(over.status).toBe(429);
    expect(over.headers.has("retry-after")).toBe(false);
  });

  it("limits a hub API in requests/s per region: one region's tenant is throttled, another's is not", async () => {
    em = await startEmulator({ link: { rateLimit: "ers=1/s@1" } });
    expect((await hubCall(em, "ERS", { tenantId: TENANT_US, body: ersBody(5) })).status).toBe(200);
    const over = await hubCall(em, "ERS", { tenantId: TENANT_US, body: ersBody(5) });
    expect(over.status).toBe(429);
    expect(
      (await hubCall(em, "ERS", { tenantId: TENANT_EU, credentials: DEV_TENANTS[TENANT_EU], body: ersBody(5) })).status,
    ).toBe(200);
    const links = em.state().links;
    expect(links["ers.US"]).toMatchObject({ requests: 2, throttled: 1, accepted: 1, limit: { unit: "requests" } });
    expect(links["ers.EU"]).toMatchObject({ requests: 1, throttled: 0 });
    expect(em.state().ers[TENANT_US].entities).toBe(5);
  });
});
