/** Where the task may send credentials and data (core/hubEndpoints.ts), and how long a run may last (core/runDeadline.ts). */
import { describe, expect, it } from "vitest";
import { endpointProblem, hubEndpoints, isLoopbackHost, shownUrl, type HubEndpoints } from "../../core/hubEndpoints";
import { defaultRunDeadlineSeconds, STOP_GRACE_SECONDS, STOP_TIMEOUT_SECONDS } from "../../core/runDeadline";
import { loadStackConfig } from "../../config/load";
import { fixtureStackFile } from "../fixtures/stacks";

describe("loopback hosts", () => {
  const host = (url: string) => new URL(url).hostname;
  it.each([
    "http://localhost/",
    "http://LOCALHOST./",
    "http://hub-ext.localhost/",
    "http://hub-ext.localhost./",
    "http://127.0.0.1/",
    "http://127.9.8.7/",
    "http://127.1/",
    "http://0x7f000001/",
    "http://2130706433/",
    "http://127.0.0.1./",
    "http://0.0.0.0/",
    "http://[::1]/",
    "http://[0:0:0:0:0:0:0:1]/",
    "http://[::]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://[::127.0.0.1]/",
  ])("%s is loopback", (url) => expect(isLoopbackHost(host(url))).toBe(true));

  it.each([
    "https://hub-ext-qa.example.com/",
    "https://localhost.example.com/",
    "https://10.0.0.5/",
    "https://[::ffff:10.0.0.5]/",
    "https://[2001:db8::1]/",
    "https://128.0.0.1/",
    "https://notlocalhost/",
  ])("%s is not", (url) => expect(isLoopbackHost(host(url))).toBe(false));
});

describe("the hosts a task may call", () => {
  const endpoints: HubEndpoints = {
    allowLoopback: false,
    regions: {
      US: { hosts: ["hub-ext-us.example.com", "mq-us.example.com:8443"] },
      EU: { hosts: ["hub-ext-eu.example.com", "10.1.2.3"] },
    },
  };

  it("accepts https on a host of the tenant's region, a private address too, with or without a trailing dot", () => {
    expect(endpointProblem("https://hub-ext-us.example.com/ers/api/", "US", endpoints)).toBeUndefined();
    expect(endpointProblem("https://HUB-EXT-US.example.com.:443/ers/api/", "US", endpoints)).toBeUndefined();
    expect(endpointProblem("https://mq-us.example.com:8443/api/v1/authorize", "US", endpoints)).toBeUndefined();
    expect(endpointProblem("https://10.1.2.3/ers/api/", "EU", endpoints)).toBeUndefined();
  });

  it.each([
    ["http://hub-ext-us.example.com/ers/api/", "US", "must use https"],
    [
      "https://evil.example.net/ers/api/",
      "US",
      "host evil.example.net is not one of the stack's hosts for region US (hub-ext-us.example.com, mq-us.example.com:8443)",
    ],
    [
      "https://hub-ext-eu.example.com/ers/api/",
      "US",
      "host hub-ext-eu.example.com is not one of the stack's hosts for region US",
    ],
    [
      "https://mq-us.example.com/api/v1/authorize",
      "US",
      "host mq-us.example.com is not one of the stack's hosts for region US",
    ],
    ["https://hub-ext-us.example.com/ers/api/", "APAC", "is not one of the stack's hosts for region APAC (none)"],
    ["https://127.0.0.1/ers/api/", "US", "points at loopback, which the definition does not allow"],
    ["https://[::ffff:127.0.0.1]/ers/api/", "US", "points at loopback"],
    ["not a url", "US", "is not a URL"],
    // Credentials on a host of the stack's: the secret would sit in clear in a shared table or record.
    [
      "https://acme:pw@hub-ext-us.example.com/ers/api/",
      "US",
      "carries credentials (user:password@ before the host): remove them",
    ],
    ["https://acme@mq-us.example.com:8443/api/v1/authorize", "US", "carries credentials"],
    // A secret in the query string is as exposed as one before the host; its name is shown, never its value.
    [
      "https://mq-us.example.com:8443/api/v1/authorize?client_secret=Zx9-q",
      "US",
      "carries a secret in its query string (client_secret=...): remove it",
    ],
    ["https://hub-ext-us.example.com/ers/api/?x=1&access_token=Zx9-q", "US", "(access_token=...)"],
    ["https://hub-ext-us.example.com/ers/api/?Password=Zx9-q", "US", "(Password=...)"],
    ["https://hub-ext-us.example.com/ers/api/?sig=Zx9-q", "US", "(sig=...)"],
  ] as const)("refuses %s for %s", (url, region, problem) => {
    expect(endpointProblem(url, region, endpoints)).toContain(problem);
  });

  it("allows loopback, over http too, only where the definition says so, and only on its hosts", () => {
    const local: HubEndpoints = { allowLoopback: true, regions: { US: { hosts: ["127.0.0.1:4100"] } } };
    expect(endpointProblem("http://127.0.0.1:4100/ers/api/", "US", local)).toBeUndefined();
    expect(endpointProblem("http://127.0.0.1:4200/ers/api/", "US", local)).toContain(
      "host 127.0.0.1:4200 is not one of the stack's hosts",
    );
    expect(
      endpointProblem("http://hub-ext-us.example.com/ers/api/", "US", {
        ...local,
        regions: { US: { hosts: ["hub-ext-us.example.com"] } },
      }),
    ).toBe("must use https");
  });

  it("takes each region's hosts from the stack: its hub APIs and its queue broker", () => {
    const config = loadStackConfig({ file: fixtureStackFile("prod") });
    const rendered = hubEndpoints(config);
    expect(rendered.allowLoopback).toBe(false);
    expect(Object.keys(rendered.regions)).toEqual(["US", "EU", "APAC"]);
    for (const region of ["US", "EU", "APAC"] as const) {
      for (const url of [...Object.values(config.hub.environments[region]!.apis), config.queues[region]!.baseUrl])
        expect(endpointProblem(url, region, rendered), url).toBeUndefined();
    }
  });

  it("takes a query without a secret, and never shows a secret's value", () => {
    expect(
      endpointProblem("https://hub-ext-us.example.com/ers/api/?region=us&page=2", "US", endpoints),
    ).toBeUndefined();
    expect(endpointProblem("https://hub-ext-us.example.com/ers/api/?api-key=Zx9-q", "US", endpoints)).not.toContain(
      "Zx9-q",
    );
  });

  it("shows a URL without its credentials or query", () => {
    expect(shownUrl("https://user:pa55@evil.example.net:8443/ers/api/?token=x#f")).toBe(
      "https://evil.example.net:8443/ers/api/",
    );
  });
});

describe("the run deadline", () => {
  it("is the schedule's period less ECS's stop timeout: a stopped run is gone before the next start", () => {
    expect(defaultRunDeadlineSeconds("rate(1 day)")).toBe(86_400 - STOP_TIMEOUT_SECONDS);
    expect(defaultRunDeadlineSeconds("cron(0 3 * * ? *)")).toBe(86_400 - STOP_TIMEOUT_SECONDS);
    expect(defaultRunDeadlineSeconds("cron(0 */6 * * ? *)")).toBe(6 * 3600 - STOP_TIMEOUT_SECONDS);
    expect(defaultRunDeadlineSeconds("rate(5 minutes)")).toBe(300 - STOP_TIMEOUT_SECONDS);
    // At least half the period; a schedule without a period (or none) counts as daily.
    expect(defaultRunDeadlineSeconds("rate(1 minute)")).toBe(30);
    expect(defaultRunDeadlineSeconds("at(2026-12-01T03:00:00)")).toBe(86_400 - STOP_TIMEOUT_SECONDS);
    expect(defaultRunDeadlineSeconds(undefined)).toBe(86_400 - STOP_TIMEOUT_SECONDS);
    expect(STOP_GRACE_SECONDS).toBeLessThan(STOP_TIMEOUT_SECONDS);
  });
});
