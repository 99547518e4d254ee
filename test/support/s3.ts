/**
 * The few calls of the S3 API that a shared scripts folder needs, on loopback, with S3's conditional-write semantics:
 * GetObject, HeadObject, PutObject (If-Match / If-None-Match: * → 412 PreconditionFailed; x-amz-tagging; user metadata),
 * GetObjectTagging, DeleteObject and ListObjectsV2, path-style (`/<bucket>/<key>`), with S3's XML errors. The AWS SDK talks to it with
 * `endpoint: <url>, forcePathStyle: true`. Request signatures are not checked.
 *
 * Why our own: the S3 servers on npm either are unmaintained (s3rver, last release 2021) or implement no conditional
 * writes, and the guarantee under test is exactly those ETag semantics.
 */
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createHash } from "node:crypto";
import { readBody } from "../../emulator/http";

export interface S3Object {
  body: Buffer;
  etag: string;
  contentType: string;
  lastModified: Date;
  /** x-amz-server-side-encryption and its KMS key id, as sent. */
  sse?: string;
  kmsKeyId?: string;
  /** x-amz-tagging, as sent. */
  tags?: Record<string, string>;
  /** User metadata: the x-amz-meta-* headers, as sent (S3 lowercases the names). */
  metadata?: Record<string, string>;
}

export interface S3EmulatorOptions {
  buckets: string[];
  /** Awaited before each request is answered (tests widen race windows with it). */
  beforeAnswer?: (req: { method: string; bucket: string; key: string }) => Promise<void>;
}

export interface S3Emulator {
  url: string;
  /** Objects by bucket, then key. */
  buckets: Map<string, Map<string, S3Object>>;
  /** Answers by status code, for tests that must see the conditional path taken. */
  answers: Record<number, number>;
  /**
   * Every request: method, bucket, key, sub-resource (`tagging`), the access key id it was signed with and the status
   * answered, for tests that must see which calls were made, and by whom (signatures are not checked).
   */
  requests: {
    method: string;
    bucket: string;
    key: string;
    subresource?: string;
    accessKeyId?: string;
    status?: number;
  }[];
  close(): Promise<void>;
}

const MAX_OBJECT_BYTES = 64 * 1024 * 1024;

function xmlEscape(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

function error(res: ServerResponse, status: number, code: string, message: string, head = false): void {
  res.writeHead(status, { "content-type": "application/xml" });
  res.end(
    head
      ? undefined
      : `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${xmlEscape(message)}</Message></Error>`,
  );
}

/** `"<quoted etag>"`, `*` or a comma-separated list: does it name `etag`? */
function matches(header: string, etag: string): boolean {
  return header.split(",").some((t) => t.trim() === "*" || t.trim() === etag);
}

export async function startS3Emulator(options: S3EmulatorOptions): Promise<S3Emulator> {
  const buckets = new Map(options.buckets.map((b) => [b, new Map<string, S3Object>()]));
  const answers: Record<number, number> = {};
  const requests: S3Emulator["requests"] = [];

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://s3.local");
    const [, bucketName = "", ...rest] = url.pathname.split("/");
    const key = decodeURIComponent(rest.join("/"));
    const method = req.method ?? "GET";
    const body = method === "PUT" ? await readBody(req, MAX_OBJECT_BYTES) : undefined;
    const subresource = url.searchParams.has("tagging") ? "tagging" : undefined;
    const accessKeyId = /Credential=([^/,\s]+)\//.exec(req.headers.authorization ?? "")?.[1];
    const request: S3Emulator["requests"][number] = {
      method,
      bucket: bucketName,
      key,
      ...(subresource ? { subresource } : {}),
      ...(accessKeyId ? { accessKeyId } : {}),
    };
    requests.push(request);
    res.on("finish", () => (request.status = res.statusCode));
    await options.beforeAnswer?.({ method, bucket: bucketName, key });
    const bucket = buckets.get(bucketName);
    if (!bucket) return error(res, 404, "NoSuchBucket", `bucket ${bucketName} does not exist`, method === "HEAD");
    const object = bucket.get(key);

    if (key === "" && method === "GET") {
      // ListObjectsV2 (prefix only; one page).
      const prefix = url.searchParams.get("prefix") ?? "";
      const keys = [...bucket.keys()].filter((k) => k.startsWith(prefix)).sort();
      const contents = keys.map(
        (k) =>
          `<Contents><Key>${xmlEscape(k)}</Key><ETag>${xmlEscape(bucket.get(k)!.etag)}</ETag><Size>${bucket.get(k)!.body.length}</Size><LastModified>${bucket.get(k)!.lastModified.toISOString()}</LastModified></Contents>`,
      );
      res.writeHead(200, { "content-type": "application/xml" });
      res.end(
        `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>${xmlEscape(bucketName)}</Name><Prefix>${xmlEscape(prefix)}</Prefix><KeyCount>${keys.length}</KeyCount><IsTruncated>false</IsTruncated>${contents.join("")}</ListBucketResult>`,
      );
      return;
    }
    if (subresource === "tagging" && method === "GET") {
      // GetObjectTagging: the tags only, never the body.
      if (!object) return error(res, 404, "NoSuchKey", `${key} does not exist`);
      const tags = Object.entries(object.tags ?? {}).map(
        ([k, v]) => `<Tag><Key>${xmlEscape(k)}</Key><Value>${xmlEscape(v)}</Value></Tag>`,
      );
      res.writeHead(200, { "content-type": "application/xml" });
      res.end(`<?xml version="1.0" encoding="UTF-8"?><Tagging><TagSet>${tags.join("")}</TagSet></Tagging>`);
      return;
    }
    switch (method) {
      case "GET":
      case "HEAD": {
        if (!object) return error(res, 404, "NoSuchKey", `${key} does not exist`, method === "HEAD");
        const headers: Record<string, string | number> = {
          etag: object.etag,
          "content-type": object.contentType,
          "content-length": object.body.length,
          "last-modified": object.lastModified.toUTCString(),
        };
        if (object.sse) headers["x-amz-server-side-encryption"] = object.sse;
        if (object.kmsKeyId) headers["x-amz-server-side-encryption-aws-kms-key-id"] = object.kmsKeyId;
        for (const [name, value] of Object.entries(object.metadata ?? {})) headers[`x-amz-meta-${name}`] = value;
        res.writeHead(200, headers);
        res.end(method === "HEAD" ? undefined : object.body);
        return;
      }
      case "PUT": {
        const ifMatch = req.headers["if-match"];
        const ifNoneMatch = req.headers["if-none-match"];
        if (typeof ifMatch === "string") {
          if (!object) return error(res, 404, "NoSuchKey", `${key} does not exist`);
          if (!matches(ifMatch, object.etag))
            return error(
              res,
              412,
              "PreconditionFailed",
              "At least one of the pre-conditions you specified did not hold",
            );
        }
        if (typeof ifNoneMatch === "string" && object && matches(ifNoneMatch, object.etag)) {
          return error(res, 412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold");
        }
        const etag = `"${createHash("md5").update(body!).digest("hex")}"`;
        const sse = req.headers["x-amz-server-side-encryption"];
        const kms = req.headers["x-amz-server-side-encryption-aws-kms-key-id"];
        const tagging = req.headers["x-amz-tagging"];
        const metadata = Object.fromEntries(
          Object.entries(req.headers).flatMap(([h, v]) =>
            h.startsWith("x-amz-meta-") && typeof v === "string" ? [[h.slice("x-amz-meta-".length), v]] : [],
          ),
        );
        bucket.set(key, {
          body: body!,
          etag,
          contentType: String(req.headers["content-type"] ?? "binary/octet-stream"),
          lastModified: new Date(),
          ...(typeof sse === "string" ? { sse } : {}),
          ...(typeof kms === "string" ? { kmsKeyId: kms } : {}),
          ...(typeof tagging === "string" ? { tags: Object.fromEntries(new URLSearchParams(tagging)) } : {}),
          ...(Object.keys(metadata).length ? { metadata } : {}),
        });
        res.writeHead(200, { etag });
        res.end();
        return;
      }
      case "DELETE":
        bucket.delete(key);
        res.writeHead(204);
        res.end();
        return;
      default:
        return error(res, 405, "MethodNotAllowed", `${method} is not supported`);
    }
  }

  const server = http.createServer((req, res) => {
    res.on("finish", () => (answers[res.statusCode] = (answers[res.statusCode] ?? 0) + 1));
    handle(req, res).catch((err: Error) => {
      if (!res.headersSent) error(res, 500, "InternalError", err.message);
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    buckets,
    answers,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
