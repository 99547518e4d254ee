/**
 * The queue broker client in-process against the emulator: every asynchronous path has its failure handled. A token
 * that expires while the re-authorization fails (503) once ended the process through an unhandled rejection.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../emulator";
import { QueueBroker, type OutgoingMessage } from "../../task/queue/broker";
import { createAgent, HubHttp } from "../../task/http/client";
import { isPermanentRefusal, queueAuthUrl, queueOrganizationsUrl } from "../../core/hubContract";
import type { Agent, Dispatcher } from "undici";

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

function message(i: number): OutgoingMessage {
  return {
    messageId: `m-${i}`,
    json: Buffer.from(JSON.stringify({ properties: {}, headers: { messageId: `m-${i}` }, body: `body ${i}` })),
  };
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

  /**
   * Until the client has no request in flight (a stray promise would settle with its request), then one turn of the
   * event loop: a rejection left unhandled by then has been reported.
   */
  const quiet = async () => {
    const busy = () =>
      Object.values((dispatcher as Agent).stats).some(
        (s) => s.running + s.pending + ("queued" in s ? s.queued : 0) > 0,
      );
    while (busy()) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setImmediate(r));
  };
  const broker = (retry = { attempts: 6, baseMs: 1, maxMs: 5 }) => {
    const dev = em.config.queues.US;
    const base = em.urls.queues.US;
    return new QueueBroker(
      {
        connection: "HUB_MQ_US",
        organizationsUrl: queueOrganizationsUrl(base),
        authUrl: queueAuthUrl(base),
        queueName: "q",
        clientId: dev.clientId,
        clientSecret: dev.clientSecret,
      },
      new HubHttp(dispatcher, retry),
    );
  };

  it("survives token expiry while the re-authorization answers 503: no unhandled rejection, every outcome reported", async () => {
    const client = broker();
    // Authorize once cleanly, then: every publish finds its token expired and every authorize fails.
    expect((await client.publish([message(0)]))[0].published).toBe(true);
    em.setFaults("queue.publish:tokenExpiry=1;queue.authorize:503=1");
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) => client.publish([message(i + 1), message(i + 100)])),
    );
    await quiet();
    expect(unhandled).toEqual([]);
    const flat = outcomes.flat();
    expect(flat).toHaveLength(40);
    expect(flat.every((o) => !o.published && /gave up after 6 attempts: authorize: HTTP 503/.test(o.reason!))).toBe(
      true,
    );
    expect(client.reauthorizations).toBeGreaterThan(0);

    // The hub recovers: the same client publishes again.
    em.setFaults("queue.publish:tokenExpiry=0.3;queue.authorize:503=0.3");
    const recovered = await Promise.all(Array.from({ length: 20 }, (_, i) => client.publish([message(i + 200)])));
    await quiet();
    expect(unhandled).toEqual([]);
    expect(recovered.flat().filter((o) => o.published).length).toBeGreaterThan(10);
  });

  it("marks a refusal of the message itself as permanent (a 4xx other than 401, 403, 408, 409, 429), and no other failure", async () => {
    const client = broker();
    // The broker refuses a messageId over 256 characters (HTTP 400): the batch is tried message by message.
    const bad: OutgoingMessage = {
      messageId: "x".repeat(300),
      json: Buffer.from(JSON.stringify({ properties: {}, headers: { messageId: "x".repeat(300) }, body: "b" })),
    };
    const [good, refused] = await client.publish([message(1), bad]);
    expect(good).toMatchObject({ published: true });
    expect(good.permanent).toBeUndefined();
    expect(refused).toMatchObject({ published: false, permanent: true, reason: expect.stringMatching(/^HTTP 400: /) });
    // A destination that refuses for now (HTTP 403) is not a permanent refusal; nor is giving up on 503s.
    const rejecting = await startEmulator({ config: { rejectDestinations: ["q"] } });
    try {
      const dev = rejecting.config.queues.US;
      const base = rejecting.urls.queues.US;
      const other = new QueueBroker(
        {
          connection: "HUB_MQ_US",
          organizationsUrl: queueOrganizationsUrl(base),
          authUrl: queueAuthUrl(base),
          queueName: "q",
          clientId: dev.clientId,
          clientSecret: dev.clientSecret,
        },
        new HubHttp(dispatcher, { attempts: 2, baseMs: 1, maxMs: 2 }),
      );
      const [forbidden] = await other.publish([message(2)]);
      expect(forbidden).toMatchObject({ published: false, reason: expect.stringMatching(/^HTTP 403/) });
      expect(forbidden.permanent).toBeUndefined();
    } finally {
      await rejecting.close();
    }
    em.setFaults("queue.publish:503=1");
    const [unavailable] = await client.publish([message(3)]);
    expect(unavailable).toMatchObject({ published: false, reason: expect.stringMatching(/^gave up after 6 attempts/) });
    expect(unavailable.permanent).toBeUndefined();
    expect([400, 404, 413, 422].map(isPermanentRefusal)).toEqual([true, true, true, true]);
    expect([401, 403, 408, 409, 429, 500, 503].map(isPermanentRefusal)).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it("reports a refused authorization on every batch without retrying it, and nothing escapes", async () => {
    const dev = em.config.queues.US;
    const base = em.urls.queues.US;
    const client = new QueueBroker(
      {
        connection: "HUB_MQ_US",
        organizationsUrl: queueOrganizationsUrl(base),
        authUrl: queueAuthUrl(base),
        queueName: "q",
        clientId: dev.clientId,
        clientSecret: "wrong",
      },
      new HubHttp(dispatcher, { attempts: 3, baseMs: 1, maxMs: 2 }),
    );
    const outcomes = (await Promise.all([client.publish([message(1)]), client.publish([message(2)])])).flat();
    expect(outcomes.map((o) => o.reason)).toEqual([
      expect.stringMatching(/refused the client credentials \(HTTP 401\)/),
      expect.stringMatching(/refused the client credentials/),
    ]);
    await quiet();
    expect(unhandled).toEqual([]);
  });
});
