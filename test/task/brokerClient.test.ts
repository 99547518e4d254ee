/**
 * The queue broker client in-process against the emulator: every asynchronous path has its failure handled. A token
 * that expires while the re-authorization fails (503) once ended the process through an unhandled rejection.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../emulator";
import { QueueBroker, type OutgoingMessage } from "../../task/queue/broker";
import { createAgent, HubHttp } from "../../task/http/client";
import { queueAuthUrl, queueOrganizationsUrl } from "../../core/hubContract";
import type { Dispatcher } from "undici";

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

function message(i: number): OutgoingMessage {
  return { messageId: `m-${i}`, json: Buffer.from(JSON.stringify({ properties: {}, headers: { messageId: `m-${i}` }, body: `body ${i}` })) };
}

describe("queue broker client", () => {
  let em: Emulator;
  let dispatcher: Dispatcher;
  beforeAll(async () => {
    em = await startEmulator({});
    dispatcher = createAgent(16);
    process.on("unhandledRejection", onUnhandled);
  });
  afterEach(() => em.reset());
  afterAll(async () => {
    process.off("unhandledRejection", onUnhandled);
    await dispatcher.close();
    await em.close();
  });

  const broker = (retry = { attempts: 6, baseMs: 1, maxMs: 5 }) => {
    const dev = em.config.queues.US;
    const base = em.urls.queues.US;
    return new QueueBroker({ connection: "HUB_MQ_US", organizationsUrl: queueOrganizationsUrl(base), authUrl: queueAuthUrl(base), queueName: "q", clientId: dev.clientId, clientSecret: dev.clientSecret }, new HubHttp(dispatcher, retry));
  };

  it("survives token expiry while the re-authorization answers 503: no unhandled rejection, every outcome reported", async () => {
    const client = broker();
    // Authorize once cleanly, then: every publish finds its token expired and every authorize fails.
    expect((await client.publish([message(0)]))[0].published).toBe(true);
    em.setFaults("queue.publish:tokenExpiry=1;queue.authorize:503=1");
    const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => client.publish([message(i + 1), message(i + 100)])));
    await new Promise((r) => setTimeout(r, 50)); // let any stray rejection surface
    expect(unhandled).toEqual([]);
    const flat = outcomes.flat();
    expect(flat).toHaveLength(40);
    expect(flat.every((o) => !o.published && /gave up after 6 attempts: authorize: HTTP 503/.test(o.reason!))).toBe(true);
    expect(client.reauthorizations).toBeGreaterThan(0);

    // The hub recovers: the same client publishes again.
    em.setFaults("queue.publish:tokenExpiry=0.3;queue.authorize:503=0.3");
    const recovered = await Promise.all(Array.from({ length: 20 }, (_, i) => client.publish([message(i + 200)])));
    await new Promise((r) => setTimeout(r, 50));
    expect(unhandled).toEqual([]);
    expect(recovered.flat().filter((o) => o.published).length).toBeGreaterThan(10);
  });

  it("reports a refused authorization on every batch without retrying it, and nothing escapes", async () => {
    const dev = em.config.queues.US;
    const base = em.urls.queues.US;
    const client = new QueueBroker({ connection: "HUB_MQ_US", organizationsUrl: queueOrganizationsUrl(base), authUrl: queueAuthUrl(base), queueName: "q", clientId: dev.clientId, clientSecret: "wrong" }, new HubHttp(dispatcher, { attempts: 3, baseMs: 1, maxMs: 2 }));
    const outcomes = (await Promise.all([client.publish([message(1)]), client.publish([message(2)])])).flat();
    expect(outcomes.map((o) => o.reason)).toEqual([expect.stringMatching(/refused the client credentials \(HTTP 401\)/), expect.stringMatching(/refused the client credentials/)]);
    await new Promise((r) => setTimeout(r, 20));
    expect(unhandled).toEqual([]);
  });
});
