/**
 * The routing-rules provider against the emulator's cfg API: posts on create, does not post an unchanged set, posts a
 * changed set, replaces for another tenant, leaves the hub's rows on delete, reports errors without secrets.
 */
import http from "node:http";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { startEmulator, type Emulator } from "../../emulator";
import { freePort } from "../../local/embeddedPostgres";
import { encodeCredentialsString } from "../../core/credentials";
import { basicAuthorization, hubApiUrl } from "../../core/hubContract";
import { defaultRoutingRules, routingRulesHash, type RoutingRule } from "../../core/routingRules";
import {
  postRoutingRules,
  routingRulesProvider,
  routingRulesUrl,
  ROUTING_RULES_PROVIDER_VERSION,
  NO_LISTING_STATUSES,
  type RoutingRuleSetState,
} from "../../providers/routingRules";
import { ROUTING_RULES_LISTING, ROUTING_RULES_LISTING_ABSENT, HUB_API_PATHS } from "../../core/hubContract";
import { annotateSecrets, exposedSecrets, secret, updateResource } from "../support/engine";

const TENANT = "3f6c9a2e-5b1d-4e8f-9a7c-2d4b6e8f0a1c";
const OTHER = "7a2d4f6b-8c1e-4a3b-b5d7-9e0f2a4c6e8b";
const CREDENTIALS = { clientId: "acme-us-qa-hrsys", clientSecret: "s3cr3t-Ab9" };
const OTHER_CREDENTIALS = { clientId: "acme-eu-qa-hrsys", clientSecret: "other-S3cret" };

let hub: Emulator;

beforeAll(async () => {
  hub = await startEmulator({ config: { tenants: { [TENANT]: CREDENTIALS, [OTHER]: OTHER_CREDENTIALS } } });
});
afterAll(async () => {
  await hub?.close();
});
beforeEach(() => {
  hub.reset();
  hub.setFaults({});
});

function ruleSet(
  rules: RoutingRule[] = defaultRoutingRules(),
  tenantId = TENANT,
  credentials = CREDENTIALS,
): RoutingRuleSetState {
  return {
    cfgApiUrl: hub.urls.cfg,
    tenantId,
    credentialsString: encodeCredentialsString(credentials),
    rules,
    rulesHash: routingRulesHash(rules),
    version: ROUTING_RULES_PROVIDER_VERSION,
  };
}

const hubRules = (tenantId = TENANT) => hub.state().routingRules[tenantId.toLowerCase()];

describe("the provider's cfg API request", () => {
  it("is the contract of core/hubContract.ts", () => {
    expect(routingRulesUrl("https://hub-ext-qa.example.com/cfg/api/", TENANT)).toBe(
      hubApiUrl("https://hub-ext-qa.example.com/cfg/api/", "CFG", TENANT),
    );
    expect(`Basic ${encodeCredentialsString(CREDENTIALS)}`).toBe(
      basicAuthorization(encodeCredentialsString(CREDENTIALS)),
    );
    // The listing refresh reads: GET on the same path; a hub without it answers one of these.
    expect(ROUTING_RULES_LISTING).toEqual({ method: "GET", api: "CFG", path: HUB_API_PATHS.CFG });
    expect(NO_LISTING_STATUSES).toEqual([...ROUTING_RULES_LISTING_ABSENT]);
  });
});

describe("routing rules: pulumi refresh", () => {
  /** Someone at the hub sets one rule's status (the cfg API updates a rule of the same key). */
  async function changeAtTheHub(rule: RoutingRule, status: number): Promise<void> {
    const response = await fetch(routingRulesUrl(hub.urls.cfg, TENANT), {
      method: "POST",
      headers: {
        Authorization: basicAuthorization(encodeCredentialsString(CREDENTIALS)),
        "Content-Type": "application/json",
      },
      body: JSON.stringify([{ ...rule, status }]),
    });
    expect(response.status).toBe(200);
  }

  it("sees a rule changed at the hub, keeps the credentials string secret, and the next up posts the set again", async () => {
    const inputs = ruleSet();
    const created = await routingRulesProvider.create(inputs);
    // The state as the engine keeps it: the credentials string secret (additionalSecretOutputs).
    const state = { ...created.outs!, credentialsString: secret(created.outs!.credentialsString) } as Record<
      string,
      unknown
    >;

    // Nothing changed: the state comes back as it was.
    expect(await routingRulesProvider.read!(TENANT, created.outs)).toEqual({
      id: TENANT,
      props: created.outs,
      inputs: created.outs,
    });

    const [changed] = inputs.rules;
    await changeAtTheHub(changed, changed.status === 1 ? 0 : 1);
    const read = await routingRulesProvider.read!(TENANT, created.outs);
    expect(read.id).toBe(TENANT);
    expect(read.props!.rules).toEqual(inputs.rules.slice(1));
    expect(read.props!.ruleCount).toBe(inputs.rules.length - 1);
    expect(read.props!.rulesHash).toBe(routingRulesHash(inputs.rules.slice(1)));
    expect(read.inputs).not.toHaveProperty("postedAt");
    // Secret after the read: the engine re-marks properties of the old state's secret names, and the string is
    // under no other name.
    const refreshed = annotateSecrets(read.props as unknown as Record<string, unknown>, state);
    expect(refreshed.credentialsString).toEqual(secret(inputs.credentialsString));
    expect(exposedSecrets(refreshed, [inputs.credentialsString, CREDENTIALS.clientSecret])).toEqual([]);

    // The next `up`: its diff against the refreshed state posts the configured set again.
    const steps: string[] = [];
    await updateResource(routingRulesProvider, { id: TENANT, state: read.props! }, inputs, steps as never);
    expect(steps).toEqual(["update"]);
    expect(hubRules().rules).toEqual(expect.arrayContaining([changed]));
    expect((await routingRulesProvider.read!(TENANT, created.outs)).props).toEqual(created.outs);
  });

  it("says once that drift cannot be seen where the cfg API has no listing, and keeps the state", async () => {
    const a = await routingRulesProvider.create(ruleSet());
    const b = await routingRulesProvider.create(ruleSet(defaultRoutingRules(), OTHER, OTHER_CREDENTIALS));
    hub.setFaults({ rules: { "cfg.routingRules": { 404: 1 } } });
    const said = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      expect(await routingRulesProvider.read!(TENANT, a.outs)).toEqual({ id: TENANT, props: a.outs, inputs: a.outs });
      expect(await routingRulesProvider.read!(OTHER, b.outs)).toEqual({ id: OTHER, props: b.outs, inputs: b.outs });
      const lines = said.mock.calls.map((c) => String(c[0]));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        /the cfg API offers no read of routing rules \(HTTP 404\), so pulumi refresh cannot see rules changed at the hub/,
      );
    } finally {
      said.mockRestore();
    }
  });

  it("keeps the state on an answer it cannot use, saying so once per cfg API, without the credentials", async () => {
    const created = await routingRulesProvider.create(ruleSet());
    const state = created.outs!;
    hub.setFaults({ rules: { "cfg.routingRules": { 500: 1 } } });
    const said = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      expect(await routingRulesProvider.read!(TENANT, state)).toEqual({ id: TENANT, props: state, inputs: state });
      expect(await routingRulesProvider.read!(TENANT, state)).toEqual({ id: TENANT, props: state, inputs: state });
      const lines = said.mock.calls.map((c) => String(c[0]));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        /^hub routing rules at http:\/\/127\.0\.0\.1:\d+\/.*\(tenant 3f6c9a2e-.*\): reading them back answered HTTP 500.*so pulumi refresh cannot see rules changed at the hub; it keeps the state of the last post .*check the tenant's credentials and the hub \(hub-export probe\)\n$/,
      );
      expect(lines[0]).not.toContain(state.credentialsString);
    } finally {
      said.mockRestore();
    }
  });
});

describe("routing rules: refresh against a cfg API whose answer cannot be used", () => {
  /** A loopback cfg API whose every answer is the one `path` names (`/<case>/api/routingRules`). */
  let server: http.Server;
  let base: string;
  const ANSWERS: Record<string, (res: http.ServerResponse) => void> = {
    unauthorized: (res) =>
      res.writeHead(401, { "Content-Type": "application/json" }).end('{"error":"bad credentials"}'),
    forbidden: (res) => res.writeHead(403).end("forbidden"),
    unavailable: (res) => res.writeHead(503).end("<html>maintenance</html>"),
    garbage: (res) => res.writeHead(200, { "Content-Type": "application/json" }).end("{not json"),
    object: (res) => res.writeHead(200, { "Content-Type": "application/json" }).end('{"rules":[]}'),
    reset: (res) => res.socket?.destroy(),
  };
  beforeAll(async () => {
    server = http.createServer((req, res) => ANSWERS[String(req.url).split("/")[1]](res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  it("keeps the state for a 401, a 403, a 503, a broken body, another shape, a reset and a closed port", async () => {
    const port = await freePort();
    const cases: [string, string, RegExp][] = [
      ...Object.keys(ANSWERS).map((name): [string, string, RegExp] => [name, `${base}/${name}/api/`, /./]),
      ["closed port", `http://127.0.0.1:${port}/closed/api/`, /reading them back failed: /],
    ];
    const expected: Record<string, RegExp> = {
      unauthorized: /reading them back answered HTTP 401: \{"error":"bad credentials"\}/,
      forbidden: /reading them back answered HTTP 403: forbidden/,
      unavailable: /reading them back answered HTTP 503: <html>maintenance<\/html>/,
      garbage: /reading them back failed: /,
      object: /reading them back did not give a JSON array/,
      reset: /reading them back failed: /,
    };
    const said = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      for (const [name, cfgApiUrl, fallback] of cases) {
        const state: RoutingRuleSetState = {
          ...ruleSet(),
          cfgApiUrl,
          ruleCount: 4,
          postedAt: "2026-11-01T00:00:00.000Z",
        };
        said.mockClear();
        // Twice: the second read says nothing more.
        for (let i = 0; i < 2; i++)
          expect(await routingRulesProvider.read!(TENANT, state), name).toEqual({
            id: TENANT,
            props: state,
            inputs: state,
          });
        const lines = said.mock.calls.map((c) => String(c[0]));
        expect(lines, name).toHaveLength(1);
        expect(lines[0], name).toContain(`hub routing rules at ${cfgApiUrl} (tenant ${TENANT}): `);
        expect(lines[0], name).toMatch(expected[name] ?? fallback);
        expect(lines[0], name).not.toContain(state.credentialsString);
      }
    } finally {
      said.mockRestore();
    }
  });
});

describe("routing rules provider", () => {
  it("posts the tenant's rule set on create", async () => {
    const inputs = ruleSet();
    const created = await routingRulesProvider.create(inputs);
    expect(created.id).toBe(TENANT);
    expect(created.outs).toMatchObject({ ...inputs, ruleCount: 8 });
    expect(Date.parse(created.outs!.postedAt!)).not.toBeNaN();
    expect(hubRules()).toMatchObject({ posts: 1, rules: defaultRoutingRules() });
  });

  it("does not post an unchanged set again, and posts a changed set", async () => {
    const olds = ruleSet();
    await routingRulesProvider.create(olds);
    // Same rules, fields in another order: the same canonical set.
    const same = ruleSet(
      defaultRoutingRules().map((r) => ({
        status: r.status,
        systemRoleCodeTarget: r.systemRoleCodeTarget,
        systemRoleCodeSource: r.systemRoleCodeSource,
        isDataMastered: r.isDataMastered,
        dataDomainCode: r.dataDomainCode,
      })),
    );
    expect(await routingRulesProvider.diff!(TENANT, olds, same)).toEqual({ changes: false, replaces: [] });

    const changed = defaultRoutingRules().map((r, i) => (i === 4 ? { ...r, status: 1 as const } : r));
    const news = ruleSet(changed);
    expect(await routingRulesProvider.diff!(TENANT, olds, news)).toEqual({ changes: true, replaces: [] });
    const updated = await routingRulesProvider.update!(TENANT, olds, news);
    expect(updated.outs).toMatchObject({ rulesHash: routingRulesHash(changed), ruleCount: 8 });
    expect(hubRules()).toMatchObject({ posts: 2, rules: changed });
  });

  it("stores new credentials without posting the same set again", async () => {
    const olds = { ...ruleSet(), postedAt: "2026-01-01T00:00:00.000Z" };
    await routingRulesProvider.create(olds);
    const news = { ...ruleSet(), credentialsString: `${olds.credentialsString}x` };
    expect((await routingRulesProvider.diff!(TENANT, olds, news)).changes).toBe(true);
    const updated = await routingRulesProvider.update!(TENANT, olds, news);
    expect(updated.outs).toMatchObject({
      credentialsString: news.credentialsString,
      postedAt: "2026-01-01T00:00:00.000Z",
    });
    expect(hubRules().posts).toBe(1);
  });

  it("replaces the resource for another tenant", async () => {
    const olds = ruleSet();
    const news = ruleSet(defaultRoutingRules(), OTHER, OTHER_CREDENTIALS);
    expect(await routingRulesProvider.diff!(TENANT, olds, news)).toEqual({ changes: true, replaces: ["tenantId"] });
    expect(
      (await routingRulesProvider.diff!(TENANT, olds, { ...olds, tenantId: TENANT.toUpperCase() })).replaces,
    ).toEqual([]);
  });

  it("leaves the hub's rows in place on delete, and says so", async () => {
    const inputs = ruleSet();
    const { id, outs } = await routingRulesProvider.create(inputs);
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      await routingRulesProvider.delete!(id, outs!);
      const message = String(stderr.mock.calls[0][0]);
      expect(message).toMatch(
        new RegExp(`routing rules of tenant ${TENANT} were left in place: the cfg API has no delete`),
      );
      expect(message).not.toContain(inputs.credentialsString);
    } finally {
      stderr.mockRestore();
    }
    const stored = await fetch(routingRulesUrl(hub.urls.cfg, TENANT), {
      headers: { Authorization: basicAuthorization(inputs.credentialsString) },
    });
    expect(await stored.json()).toEqual(defaultRoutingRules());
  });

  it("fails on a refused request with the status and a short excerpt, never the credentials", async () => {
    const wrong = ruleSet(defaultRoutingRules(), TENANT, { ...CREDENTIALS, clientSecret: "wrong-secret" });
    const error = (await routingRulesProvider.create(wrong).catch((e: Error) => e)) as Error;
    expect(error.message).toMatch(
      new RegExp(`^cfg API POST routingRules for tenant ${TENANT} failed: HTTP 401 Unauthorized: .{1,203}$`),
    );
    expect(error.message).not.toContain(wrong.credentialsString);
    expect(error.message).not.toContain("wrong-secret");
    expect(hubRules()).toBeUndefined();
  });

  it("after a 5xx without Retry-After, reads the rules back instead of posting again, and stops when it cannot", async () => {
    // Every cfg request answers 503 (no Retry-After): the POST's fate is unknown and the read fails too.
    hub.setFaults("cfg.routingRules:503=1");
    const error = (await postRoutingRules({ ...ruleSet(), attempts: 3 }).catch((e: Error) => e)) as Error;
    expect(error.message).toMatch(
      /: HTTP 503 .*; the hub may hold the set already, and reading them back answered HTTP 503/,
    );
    // One POST and one read: never a second POST.
    expect(hub.state().faults.stats["cfg.routingRules"]).toMatchObject({ requests: 2 });
  });

  it("fails on a hostile answer without echoing the credentials or an escape sequence, and reads at most 64 KiB of it", async () => {
    const inputs = ruleSet();
    for (const spec of ["cfg.routingRules:echo=1", "cfg.routingRules:escape=1"]) {
      hub.setFaults(spec);
      const error = (await postRoutingRules(inputs).catch((e: Error) => e)) as Error;
      expect(error.message).toMatch(/failed: HTTP 400 Bad Request: /);
      expect(error.message).not.toContain(inputs.credentialsString);
      expect(error.message).not.toContain(inputs.credentialsString.slice(0, -2));
      expect(error.message).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    }
    expect(hub.state().routingRules[TENANT]).toBeUndefined();
  });
});

/** A cfg API on loopback that plays one scripted answer per request, recording what it got. */
async function scriptedCfg(
  answers: ((req: { method: string; body: RoutingRule[] }, res: import("node:http").ServerResponse) => void)[],
) {
  const http = await import("node:http");
  const seen: { method: string; body: RoutingRule[] }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const r = { method: req.method ?? "", body: text ? (JSON.parse(text) as RoutingRule[]) : [] };
      seen.push(r);
      (answers[seen.length - 1] ?? ((_, x) => x.writeHead(500).end()))(r, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as import("node:net").AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/cfg/api/`,
    seen,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

describe("routing rules: posted at most once where the hub may have stored them", () => {
  const json = (
    res: import("node:http").ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ) => res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
  const rules = defaultRoutingRules();
  const request = (url: string) => ({
    cfgApiUrl: url,
    tenantId: TENANT,
    credentialsString: encodeCredentialsString(CREDENTIALS),
    rules,
    timeoutMs: 300,
  });

  it("a POST that timed out after the hub stored the set: read back, nothing posted again", async () => {
    const cfg = await scriptedCfg([() => {}, (_, res) => json(res, 200, rules)]);
    try {
      expect(await postRoutingRules(request(cfg.url))).toEqual({ status: 200, attempts: 1, posted: 0 });
      expect(cfg.seen.map((r) => r.method)).toEqual(["POST", "GET"]);
    } finally {
      await cfg.close();
    }
  });

  it("a 500 after the hub stored part of the set: only the missing rules are posted", async () => {
    const cfg = await scriptedCfg([
      (_, res) => json(res, 500, { message: "partly stored" }),
      (_, res) => json(res, 200, rules.slice(0, 3)),
      (_, res) => json(res, 200, {}),
    ]);
    try {
      expect(await postRoutingRules(request(cfg.url))).toEqual({ status: 200, attempts: 2, posted: 5 });
      expect(cfg.seen.map((r) => r.method)).toEqual(["POST", "GET", "POST"]);
      expect(cfg.seen[2].body).toEqual(rules.slice(3));
    } finally {
      await cfg.close();
    }
  });

  it("a timeout where the cfg API offers no read: stops, saying the hub may hold the set already", async () => {
    const cfg = await scriptedCfg([() => {}, (_, res) => json(res, 404, { message: "no such resource" })]);
    try {
      const error = (await postRoutingRules(request(cfg.url)).catch((e: Error) => e)) as Error;
      expect(error.message).toBe(
        `cfg API POST routingRules for tenant ${TENANT}: no answer within 300 ms; the hub may hold the set already, and the cfg API offers no read of routing rules (HTTP 404): check the tenant's routing rules on the hub before posting again (pulumi up)`,
      );
      expect(cfg.seen.map((r) => r.method)).toEqual(["POST", "GET"]);
    } finally {
      await cfg.close();
    }
  });

  it("a 503 with Retry-After was not processed: posted again", async () => {
    const cfg = await scriptedCfg([
      (_, res) => json(res, 503, { message: "maintenance" }, { "retry-after": "0" }),
      (_, res) => json(res, 201, {}),
    ]);
    try {
      expect(await postRoutingRules(request(cfg.url))).toEqual({ status: 201, attempts: 2, posted: 8 });
      expect(cfg.seen.map((r) => r.method)).toEqual(["POST", "POST"]);
    } finally {
      await cfg.close();
    }
  });

  it("reports an unreachable hub", async () => {
    const port = await freePort();
    const error = (await postRoutingRules({
      ...ruleSet(),
      cfgApiUrl: `http://127.0.0.1:${port}/cfg/api/`,
      attempts: 1,
    }).catch((e: Error) => e)) as Error;
    expect(error.message).toMatch(
      /^cfg API POST routingRules for tenant .* failed after 1 attempt: network error \(ECONNREFUSED\); check the hub \(hub-export probe\), then run again$/,
    );
    // A refusal its user fixes: the CLI shows it without a stack trace, exit 1 (core/refusals.ts).
    expect(error.name).toBe("UserError");
  });

  it("checks its inputs", async () => {
    const inputs = ruleSet();
    expect(await routingRulesProvider.check!(inputs, inputs)).toEqual({ inputs });
    expect((await routingRulesProvider.check!(inputs, { ...inputs, rulesHash: "0".repeat(64) })).failures).toEqual([
      { property: "rulesHash", reason: "is not the hash of the canonical rule set" },
    ]);
    expect((await routingRulesProvider.check!(inputs, { ...inputs, cfgApiUrl: "https://hub/cfg" })).failures).toEqual([
      { property: "cfgApiUrl", reason: "must be an http(s) URL ending in /api/" },
    ]);
  });
});
