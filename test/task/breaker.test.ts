/**
 * The breaker of a link (task/http/breaker.ts) on a clock of its own, then in front of a real HTTP server on loopback:
 * what opens it, what does not, what an open link does to a request, and the probe of the next run. Its settings as
 * task/README.md documents them.
 */
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Agent } from "undici";
import { Breaker, BREAKER_ENV, DEFAULT_BREAKER, LinkOpen, type BreakerTicket } from "../../task/http/breaker";
import { HubHttp } from "../../task/http/client";
import { breakerFromEnv } from "../../task/context";
import { postToHub } from "../../task/hub/api";
import { RunStopped } from "../../task/stop";

/** A breaker on a clock the test moves. */
function clocked(settings = DEFAULT_BREAKER) {
  let now = 0;
  const opened: string[] = [];
  const breaker = new Breaker(
    "queue.EU",
    settings,
    (b) => opened.push(b.why!),
    () => now,
  );
  const send = async (
    verdict: "answered" | "failed" | "none",
    atMs: number,
    error = "no complete answer within 60 s (the request's deadline)",
    sentAtMs = 0,
  ) => {
    const ticket = await breaker.admit();
    now = atMs;
    ticket.done(verdict, error, verdict === "failed" && error.includes("deadline") ? sentAtMs : undefined);
  };
  return { breaker, opened, send, at: (ms: number) => (now = ms) };
}

describe("a link's breaker", () => {
  it("opens after 3 failures in a row once nothing was answered for 30 s: a silent hub costs one round of deadlines", async () => {
    const { breaker, opened, send } = clocked();
    await send("answered", 100); // the authorize
    for (let i = 0; i < 2; i++) await send("failed", 60_000);
    expect(breaker.state).toBe("closed");
    await send("failed", 60_000);
    expect(breaker.state).toBe("open");
    expect(opened).toEqual(["3 requests failed in a row and none was answered for 60 s"]);
    await expect(breaker.admit()).rejects.toBeInstanceOf(LinkOpen);
    expect(() => breaker.throwIfOpen()).toThrow(
      "hub link queue.EU is open (3 requests failed in a row and none was answered for 60 s); last error: no complete answer within 60 s (the request's deadline)",
    );
    // Three deadlines, paid at once: one wait.
    expect(breaker.snapshot()).toMatchObject({ state: "open", failures: 3, deadlines: 3, deadlineWaits: 1 });
  });

  it("a request alone (one batch, or the shared authorize) pays its deadlines one after another: three waits", async () => {
    const { breaker, opened, send } = clocked();
    await send("failed", 60_000, undefined, 0);
    await send("failed", 120_000, undefined, 60_000);
    expect(breaker.state).toBe("closed");
    await send("failed", 180_000, undefined, 120_000);
    expect(opened).toEqual(["3 requests failed in a row and none was answered for 180 s"]);
    expect(breaker.snapshot()).toMatchObject({ deadlines: 3, deadlineWaits: 3 });
  });

  it("stays closed on a burst of failures between answers (a busy, healthy link with 5 % errors)", async () => {
    const { breaker, send } = clocked();
    let t = 0;
    for (let i = 0; i < 2000; i++) {
      t += 5;
      // Bursts of 4 failures every 20 requests: 20 % fail, never 30 s without an answer.
      await send(i % 20 < 4 ? "failed" : "answered", t, "HTTP 503: injected fault");
    }
    expect(breaker.state).toBe("closed");
    expect(breaker.snapshot().failures).toBe(400);
  });

  it("opens when 80 % of at least 20 requests in the window failed: a hub that fails fast, or answers one in ten", async () => {
    const fast = clocked();
    for (let i = 1; i <= 19; i++) await fast.send("failed", i * 10, "network error ECONNRESET: other side closed");
    expect(fast.breaker.state).toBe("closed");
    await fast.send("failed", 200, "network error ECONNRESET: other side closed");
    expect(fast.opened).toEqual(["20 of the 20 requests of the last 30 s failed"]);
    const flaky = clocked();
    for (let i = 1; i <= 40 && flaky.breaker.state !== "open"; i++)
      await flaky.send(i % 10 === 0 ? "answered" : "failed", i * 100, "HTTP 502: bad gateway");
    expect(flaky.opened).toEqual(["19 of the 21 requests of the last 30 s failed"]);
    // The window forgets: 19 failures a minute ago and one now is not a rate.
    const old = clocked();
    for (let i = 1; i <= 19; i++) await old.send("failed", i * 10);
    await old.send("answered", 200);
    await old.send("failed", 60_000);
    expect(old.breaker.state).toBe("closed");
  });

  it("a 429, a 4xx and an answer too long are answers; a stop decides nothing", async () => {
    const { breaker, send } = clocked();
    for (let i = 1; i <= 30; i++) await send(i % 2 ? "answered" : "none", i * 2000);
    expect(breaker.state).toBe("closed");
    expect(breaker.snapshot()).toMatchObject({ failures: 0 });
  });

  it("half open for the next run: the first request goes alone and decides; the others wait for it", async () => {
    const { breaker } = clocked();
    breaker.probeFirst();
    const probe = await breaker.admit();
    // The authorize is not the link's work: it neither waits nor closes the link.
    const auth = await breaker.auxiliary.admit();
    auth.done("answered");
    expect(breaker.state).toBe("probing");
    let waited: BreakerTicket[] = [];
    const others = Promise.all([breaker.admit(), breaker.admit()]).then((t) => (waited = t));
    await Promise.resolve();
    expect(waited).toEqual([]);
    probe.done("answered");
    await others;
    expect(waited).toHaveLength(2);
    expect(breaker.state).toBe("closed");

    const dead = clocked().breaker;
    dead.probeFirst();
    const first = await dead.admit();
    const behind = dead.admit();
    first.done("failed", "no complete answer within 60 s (the request's deadline)", 0);
    await expect(behind).rejects.toThrow(
      "hub link queue.EU is open (the first request of the run, its probe, failed: the last run left it open)",
    );
    // A probe abandoned by the run's stop hands the probe on.
    const handed = clocked().breaker;
    handed.probeFirst();
    const abandoned = await handed.admit();
    const next = handed.admit();
    abandoned.done("none");
    (await next).done("answered");
    expect(handed.state).toBe("closed");
  });
});

describe("a request on an open link", () => {
  let server: http.Server;
  let base: string;
  let requests = 0;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      requests++;
      req.resume();
      res.writeHead(503).end('{"message":"down"}');
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("is not retried and not given up as failed: LinkOpen, a resumable stop, after the breaker's requests, not the retry budget's", async () => {
    const client = new HubHttp(
      new Agent(),
      { attempts: 8, baseMs: 1, maxMs: 2 },
      { deadlineMs: 5000, budgetMs: 60_000 },
    );
    const breaker = new Breaker("ers.US", { ...DEFAULT_BREAKER, minRequests: 5 });
    const call = {
      api: "ERS" as const,
      apiUrl: `${base}/ers/api/`,
      path: "entities?tenantId={tenantId}",
      tenantId: "11111111-1111-4111-8111-111111111111",
      credentialsString: "x",
      body: "{}",
    };
    // Without a breaker: 8 attempts, then given up.
    await expect(postToHub(client, call)).rejects.toThrow(/gave up .* after 8 attempts: HTTP 503: down/);
    requests = 0;
    const calls = await Promise.allSettled([
      postToHub(client, call, undefined, breaker),
      postToHub(client, call, undefined, breaker),
    ]);
    for (const c of calls) {
      expect(c.status).toBe("rejected");
      expect((c as PromiseRejectedResult).reason).toBeInstanceOf(LinkOpen);
      expect((c as PromiseRejectedResult).reason).toBeInstanceOf(RunStopped);
    }
    // The 5 that opened it, and at most one the other caller had in flight then.
    const sent = requests;
    expect(sent).toBeGreaterThanOrEqual(5);
    expect(sent).toBeLessThanOrEqual(6);
    expect(((calls[0] as PromiseRejectedResult).reason as LinkOpen).reason).toMatch(
      /^hub link ers\.US is open \(5 of the 5 requests of the last 30 s failed\); last error: HTTP 503: down$/,
    );
    // And the next request is never sent.
    await expect(postToHub(client, call, undefined, breaker)).rejects.toBeInstanceOf(LinkOpen);
    expect(requests).toBe(sent);
  });
});

describe("the breaker's settings", () => {
  it("defaults, each from the environment, a bad value naming its variable", () => {
    expect(breakerFromEnv({})).toEqual({ failures: 3, windowMs: 30_000, rate: 0.8, minRequests: 20 });
    expect(
      breakerFromEnv({
        HUB_EXPORT_BREAKER_FAILURES: "5",
        HUB_EXPORT_BREAKER_WINDOW_SECONDS: "2.5",
        HUB_EXPORT_BREAKER_FAILURE_PERCENT: "50",
        HUB_EXPORT_BREAKER_MIN_REQUESTS: "4",
      }),
    ).toEqual({ failures: 5, windowMs: 2500, rate: 0.5, minRequests: 4 });
    expect(() => breakerFromEnv({ HUB_EXPORT_BREAKER_FAILURE_PERCENT: "120" })).toThrow(
      "HUB_EXPORT_BREAKER_FAILURE_PERCENT must be a whole number from 1 to 100, got '120'",
    );
    expect(() => breakerFromEnv({ HUB_EXPORT_BREAKER_FAILURES: "0" })).toThrow(
      "HUB_EXPORT_BREAKER_FAILURES must be a whole number from 1, got '0'",
    );
  });

  it("task/README.md lists each with its default, next to the retry settings", () => {
    const readme = fs.readFileSync(path.join(__dirname, "..", "..", "task", "README.md"), "utf8");
    for (const { name, default: value } of Object.values(BREAKER_ENV))
      expect(readme).toContain(`\`${name}\` (${value})`);
  });
});
