/**
 * A loopback HTTP proxy in front of the emulator that notes every messageId PUT to a queue, in order, and may hold
 * each answer back a while after the emulator processed the request. The kill test uses that: a task killed then has
 * requests the hub processed and never answered, as with a real hub, whatever the task was doing.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { HubUrls } from "../../bench/platform";

export interface RecordingProxy {
  urls: HubUrls;
  /** messageIds in the order their PUTs arrived (a retried one appears again). */
  puts: string[];
  /** ERS entity requests forwarded. */
  ersPosts: number;
  /** Resolves once every request forwarded so far has its answer from the emulator (what the hub received is settled). */
  settled(): Promise<void>;
  close(): Promise<void>;
}

export async function startRecordingProxy(
  target: string,
  options: { answerDelayMs?: number } = {},
): Promise<RecordingProxy> {
  const upstream = new URL(target);
  const puts: string[] = [];
  const proxy = { puts, ersPosts: 0 };
  let outstanding = 0;
  const onSettled: (() => void)[] = [];
  const done = () => {
    if (--outstanding === 0) for (const f of onSettled.splice(0)) f();
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      if (req.method === "POST" && /^\/ers\//.test(req.url ?? "")) proxy.ersPosts++;
      if (req.method === "PUT" && /\/messages(\/|$)/.test(req.url ?? "")) {
        try {
          const doc = JSON.parse(body.toString("utf8")) as
            { headers?: { messageId?: string } } | { headers?: { messageId?: string } }[];
          for (const m of Array.isArray(doc) ? doc : [doc]) if (m.headers?.messageId) puts.push(m.headers.messageId);
        } catch {
          // not JSON: the emulator answers it
        }
      }
      outstanding++;
      const forward = http.request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          done();
          const reply = () => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          };
          if (options.answerDelayMs) setTimeout(reply, options.answerDelayMs);
          else reply();
        },
      );
      forward.on("error", () => {
        done();
        res.destroy();
      });
      forward.end(body);
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(proxy, {
    settled: () => (outstanding === 0 ? Promise.resolve() : new Promise<void>((resolve) => onSettled.push(resolve))),
    urls: {
      queues: { US: `${base}/mq/us`, EU: `${base}/mq/eu`, APAC: `${base}/mq/apac` },
      cfg: `${base}/cfg/api/`,
      ers: `${base}/ers/api/`,
      hrsys: `${base}/hrsys/api/`,
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  });
}
