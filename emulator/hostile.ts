/**
 * A hostile hub: the answers of a broken or malicious server (`drip`, `silence`, `huge`, `echo`, `escape`,
 * `wrongBody`; emulator/README.md describes each), drawn like any fault (emulator/faults.ts), so that the task's
 * deadlines, answer cap and redaction are tested on loopback. Nothing is stored.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { HostileKind } from "./faults";
import { readBody, sendError, sendJson } from "./http";

export const DRIP_INTERVAL_MS = 1000;
export const HUGE_BYTES = 1024 * 1024 * 1024;
/** What an echo quotes of the request body at most. */
const ECHO_BODY_BYTES = 4096;
/** Escape sequences a terminal would act on: set the title, clear the screen, colour, a forged line, CSI in C1, RLO. */
export const ESCAPE_TEXT =
  "\u001b]0;owned\u0007\u001b[2J\u001b[31mALERT\u001b[0m\r\nforged: run.done\u009b31m\u202egnp.exe";

/** Answers the request the hostile way; the status written (0 when none is). */
export async function hostileAnswer(kind: HostileKind, req: IncomingMessage, res: ServerResponse): Promise<number> {
  switch (kind) {
    case "drip":
      req.resume();
      res.writeHead(200, { "content-type": "application/json" });
      res.write("[");
      drip(res);
      return 200;
    case "silence":
      req.resume();
      return 0;
    case "huge":
      req.resume();
      res.writeHead(200, { "content-type": "application/json" });
      flood(res);
      return 200;
    case "echo": {
      const body = await readBody(req, 16 * 1024 * 1024).catch(() => Buffer.alloc(0));
      const headers = Object.entries(req.headers).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(", ") : v}`);
      sendError(
        res,
        400,
        `bad request; you sent ${headers.join("; ")}; body ${body.subarray(0, ECHO_BODY_BYTES).toString("utf8")}`,
      );
      return 400;
    }
    case "escape":
      req.resume();
      sendError(res, 400, ESCAPE_TEXT);
      return 400;
    case "wrongBody":
      req.resume();
      sendJson(res, 200, { unexpected: "shape", items: [{ id: 1 }] });
      return 200;
  }
}

/** One byte every DRIP_INTERVAL_MS until the client goes away. */
function drip(res: ServerResponse): void {
  const timer = setInterval(() => res.write(" "), DRIP_INTERVAL_MS);
  timer.unref();
  res.on("close", () => clearInterval(timer));
}

/** HUGE_BYTES of body in 64 KiB chunks, with backpressure, stopping when the client closes. */
function flood(res: ServerResponse): void {
  const chunk = Buffer.alloc(64 * 1024, "x");
  let left = HUGE_BYTES;
  const pump = () => {
    while (left > 0 && !res.destroyed) {
      left -= chunk.length;
      if (!res.write(chunk)) return void res.once("drain", pump);
    }
    if (!res.destroyed) res.end();
  };
  pump();
}
