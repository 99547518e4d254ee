/**
 * The connection store: a folder of `<SystemName>.json` files (the embedded default), or Secrets Manager secrets
 * `PREFIX/connection-strings/<SystemName>` (`secretsmanager:PREFIX`).
 */
import fs from "node:fs";
import path from "node:path";
import { UserError } from "../../core/errors";
import { connectionFileName, connectionSecretName } from "../../core/naming";
import { parseStoredConnection, type StoredConnection } from "./record";

export interface ConnectionStore {
  describe: string;
  /** The record, or undefined for an unknown connection name. */
  get(name: string): Promise<StoredConnection | undefined>;
  close(): void;
}

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const SECRETS_MANAGER = "secretsmanager:";

export function openConnectionStore(spec: string): ConnectionStore {
  if (spec.startsWith(SECRETS_MANAGER)) {
    const prefix = spec.slice(SECRETS_MANAGER.length).replace(/\/+$/, "");
    if (!prefix) throw new UserError(`connection store '${spec}': give a prefix, as in secretsmanager:acme/qa`);
    // The AWS SDK is loaded where a store is Secrets Manager, at the first read.
    let reader: ReturnType<typeof openReader> | undefined;
    const openReader = () => import("../aws/secretsManager.js").then((m) => m.secretsManagerReader());
    return {
      describe: `Secrets Manager ${prefix}/connection-strings/`,
      async get(name) {
        if (!SAFE_NAME.test(name)) return undefined;
        const secretName = connectionSecretName(prefix, name);
        const text = await (reader ??= openReader()).then((r) => r.read(secretName));
        return text === undefined ? undefined : parseStoredConnection(text, name, `secret ${secretName}`);
      },
      close: () => void reader?.then((r) => r.close()),
    };
  }
  const dir = spec;
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory())
    throw new UserError(`connection store ${dir}: not a folder`);
  return {
    describe: `folder ${dir}`,
    async get(name) {
      if (!SAFE_NAME.test(name)) return undefined;
      const file = path.join(dir, connectionFileName(name));
      let text: string;
      try {
        text = fs.readFileSync(file, "utf8");
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw new UserError(
          `connection ${name}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        );
      }
      return parseStoredConnection(text, name, file);
    },
    close() {},
  };
}
