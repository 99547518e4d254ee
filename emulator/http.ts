/** Small HTTP helpers for the emulator: bounded body reading, JSON answers, and an error type that carries a status. */
import { createHash, timingSafeEqual } from "node:crypto";
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from "node:http";

/** An answer other than success, thrown by handlers and turned into a JSON error reply by the router. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "HttpError";
  }
}

/** Thrown by readBody when the body passes its limit; the connection must then be closed (see sendError). */
export class PayloadTooLargeError extends HttpError {
  constructor(limit: number) {
    super(413, `request body exceeds ${limit} bytes`, { connection: "close" });
  }
}

/**
 * Reads a request body of at most `limit` bytes. A declared Content-Length over the limit fails before reading
 * anything; a body that grows past the limit stops being read at once (the stream is paused, nothing more is
 * buffered) so that an oversized upload costs no memory.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > limit) {
    req.pause();
    return Promise.reject(new PayloadTooLargeError(limit));
  }
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.pause();
        reject(new PayloadTooLargeError(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err instanceof HttpError ? err : new HttpError(400, `request body could not be read: ${err.message}`));
    };
    // The client went away mid-body: nobody will read the answer, but it is not the emulator's fault either.
    const onClose = () => {
      if (!req.complete) onError(new HttpError(400, "request body incomplete: the connection closed"));
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}

/** Parses a JSON body; a syntax error is the client's fault (400). */
export function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch (err) {
    throw new HttpError(400, `body is not valid JSON: ${(err as Error).message}`);
  }
}

/** The media type of the request, lower case, without parameters (`application/json; charset=utf-8` → `application/json`). */
export function mediaType(req: IncomingMessage): string {
  return (req.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
}

export function requireMediaType(req: IncomingMessage, expected: string): void {
  const actual = mediaType(req);
  if (actual !== expected)
    throw new HttpError(415, `Content-Type must be ${expected}${actual ? `, got ${actual}` : ""}`);
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** An error answer: `{"error": <reason phrase>, "message": <why>}` (node's phrase, or `HTTP <status>` without one). */
export function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, { error: STATUS_CODES[status] ?? `HTTP ${status}`, message }, headers);
}

export function methodNotAllowed(allowed: string[]): HttpError {
  return new HttpError(405, `method not allowed; use ${allowed.join(" or ")}`, { allow: allowed.join(", ") });
}

/** What a handler answers; the router sends it (or, for an injected lost reply, drops the connection instead). */
export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** A zod error as one line, `path: message; path: message`, naming at most `max` issues. */
export function describeIssues(
  issues: readonly { path: readonly PropertyKey[]; message: string }[],
  prefix = "",
  max = 5,
): string {
  const parts = issues.slice(0, max).map((issue) => {
    let key = prefix;
    for (const part of issue.path)
      key += typeof part === "number" ? `[${part}]` : key ? `.${String(part)}` : String(part);
    return `${key || "body"}: ${issue.message}`;
  });
  if (issues.length > max) parts.push(`and ${issues.length - max} more`);
  return parts.join("; ");
}

/** Compares secrets in constant time: both sides are hashed first, so their lengths leak nothing either. */
export function safeEqual(actual: string, expected: string): boolean {
  const a = createHash("sha256").update(actual, "utf8").digest();
  const b = createHash("sha256").update(expected, "utf8").digest();
  return timingSafeEqual(a, b);
}
