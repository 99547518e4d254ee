/**
 * The emulator routes by the contract module (core/hubContract.ts): queue paths are parsed by parseQueuePath, the
 * inverse of the URL builders the clients use, and the hub APIs answer at HUB_API_PATHS.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  HUB_API_NAMES,
  HUB_API_PATHS,
  parseQueuePath,
  queueAuthUrl,
  queueMessagesUrl,
  queueOrganizationsUrl,
} from "../../core/hubContract";
import { startEmulator, type Emulator } from "../../emulator";

/** Decoded path segments of `url` under `base`. */
const segmentsUnder = (base: string, url: string) =>
  new URL(url).pathname
    .slice(new URL(base).pathname.length + 1)
    .split("/")
    .map(decodeURIComponent);

describe("parseQueuePath", () => {
  const base = "https://mq-us.example.com/some/prefix";

  it("reads back what the URL builders build", () => {
    expect(parseQueuePath(segmentsUnder(base, queueAuthUrl(base)))).toEqual({ endpoint: "authorize" });
    const batch = queueMessagesUrl(queueOrganizationsUrl(base), "org 1", "env/2", "acme-empl-us");
    expect(parseQueuePath(segmentsUnder(base, batch))).toEqual({
      endpoint: "publish",
      orgId: "org 1",
      envId: "env/2",
      queueName: "acme-empl-us",
    });
    expect(parseQueuePath(segmentsUnder(base, `${batch}/m-1`))).toEqual({
      endpoint: "publish",
      orgId: "org 1",
      envId: "env/2",
      queueName: "acme-empl-us",
      messageId: "m-1",
    });
  });

  it.each([
    ["nothing", []],
    ["another version", ["api", "v2", "authorize"]],
    ["the organizations list", ["api", "v1", "organizations"]],
    [
      "a trailing slash after messages",
      ["api", "v1", "organizations", "o", "environments", "e", "destinations", "q", "messages", ""],
    ],
    ["a misspelt segment", ["api", "v1", "organizations", "o", "environment", "e", "destinations", "q", "messages"]],
    [
      "a path below a message",
      ["api", "v1", "organizations", "o", "environments", "e", "destinations", "q", "messages", "m", "x"],
    ],
  ])("is undefined for %s", (_, segments) => {
    expect(parseQueuePath(segments)).toBeUndefined();
  });
});

describe("the emulator's hub API routes", () => {
  let em: Emulator;
  beforeAll(async () => {
    em = await startEmulator();
  });
  afterAll(async () => {
    await em?.close();
  });

  it("are the contract's paths under each API URL", async () => {
    const bases = { CFG: em.urls.cfg, ERS: em.urls.ers, HRSYS: em.urls.hrsys };
    for (const api of HUB_API_NAMES) {
      // No tenant, no credentials: a known route refuses the request (4xx), an unknown one does not exist (404).
      const status = (await fetch(`${bases[api]}${HUB_API_PATHS[api]}`, { method: "POST" })).status;
      expect([400, 401], api).toContain(status);
      expect((await fetch(`${bases[api]}${HUB_API_PATHS[api]}x`, { method: "POST" })).status, api).toBe(404);
    }
  });
});
