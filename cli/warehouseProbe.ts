/**
 * `hub-export probe --warehouse`: as the stack's admin login (or the login of --database-url), reads the catalog and
 * says which of `pulumi up`'s and `pulumi destroy`'s prerequisites hold (core/warehousePrerequisites.ts), each missing
 * one with the SQL its DBA runs, ready to paste. Changes nothing. The password comes from PGPASSWORD or a prompt
 * without echo, never from the command line.
 */
import readline from "node:readline";
import { UsageError, UserError } from "../core/errors";
import { maskSecret } from "../core/redact";
import type { StackConfig } from "../config/schema";
import { PROJECT_ROOT } from "../config/load";
import { schemaOnly } from "../core/naming";
import { provisioningLogin, type PgConnection, type SslMode } from "../providers/pg";
import { probeWarehouse, WarehouseConnectError, type WarehouseProbe } from "../operate/warehouseProbe";
import type { Io } from "./command";

export interface WarehouseProbeValues {
  "database-url"?: string;
  json?: boolean;
}

const SSL_MODES: SslMode[] = ["disable", "require", "verify-full"];

/**
 * The admin login and where to reach it: --database-url's host, port, user and database, else the stack's (its
 * provisioning endpoint, as `pulumi up` takes). TLS as the stack configures it, or the URL's `sslmode`.
 */
function target(value: string | undefined, db: StackConfig["database"]) {
  if (value === undefined) return { host: undefined, port: undefined, user: db.admin.username, sslMode: undefined };
  // The value is never echoed: it may hold a password.
  if (!URL.canParse(value))
    throw new UsageError(
      "--database-url must be a URL like postgres://ADMIN@HOST:5432/DATABASE; the value given is not a URL",
    );
  const url = new URL(value);
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:")
    throw new UsageError(`--database-url must be a postgres:// URL, got a ${url.protocol}// URL`);
  if (url.password)
    throw new UsageError(
      "--database-url must not carry a password (USER:PASSWORD@ before the host): set PGPASSWORD, or type it at the prompt",
    );
  if (!url.hostname || url.pathname.length <= 1)
    throw new UsageError("--database-url must name a host and a database: postgres://ADMIN@HOST:5432/DATABASE");
  const database = decodeURIComponent(url.pathname.slice(1));
  if (database !== db.database)
    throw new UsageError(
      `--database-url names database ${database}, but the stack's is ${db.database} (hubExport:database.database): the prerequisites are the stack's`,
    );
  const sslMode = url.searchParams.get("sslmode") ?? undefined;
  if (sslMode !== undefined && !SSL_MODES.includes(sslMode as SslMode))
    throw new UsageError(`--database-url's sslmode must be one of ${SSL_MODES.join(", ")}, got '${sslMode}'`);
  return {
    host: url.hostname,
    port: url.port ? Number(url.port) : 5432,
    user: decodeURIComponent(url.username) || db.admin.username,
    sslMode: sslMode as SslMode | undefined,
  };
}

/** A line typed without echo on a terminal; otherwise the first line of the input (a pipe). */
export async function promptSecret(io: Io, prompt: string): Promise<string> {
  const stdin = io.stdin as NodeJS.ReadStream;
  io.stderr.write(prompt);
  if (!stdin.isTTY) {
    const lines = readline.createInterface({ input: stdin, terminal: false });
    try {
      for await (const line of lines) return line;
      return "";
    } finally {
      lines.close();
      io.stderr.write("\n");
    }
  }
  stdin.setRawMode(true);
  stdin.resume();
  try {
    return await new Promise<string>((resolve, reject) => {
      let typed = "";
      const onData = (chunk: Buffer) => {
        for (const ch of chunk.toString("utf8")) {
          if (ch === "\r" || ch === "\n" || ch === "\u0004") return done(() => resolve(typed));
          if (ch === "\u0003") return done(() => reject(new UserError("interrupted at the password prompt")));
          typed = ch === "\u007f" || ch === "\b" ? typed.slice(0, -1) : typed + ch;
        }
      };
      const done = (settle: () => void) => {
        stdin.off("data", onData);
        settle();
      };
      stdin.on("data", onData);
    });
  } finally {
    stdin.setRawMode(false);
    stdin.pause();
    io.stderr.write("\n");
  }
}

/** Runs the probe; 0 when every prerequisite holds, 1 when some do not (listed, with their SQL). */
export async function runWarehouseProbe(values: WarehouseProbeValues, config: StackConfig, io: Io): Promise<number> {
  const db = config.database;
  const where = target(values["database-url"], db);
  const password = process.env.PGPASSWORD || (await promptSecret(io, `Password for ${where.user}: `));
  if (!password) throw new UserError(`no password for ${where.user}: set PGPASSWORD, or type it at the prompt`);
  maskSecret(password);
  let login: PgConnection;
  try {
    // The route and TLS of `pulumi up` (providers/pg.ts): through a tunnel, verify-full still checks the real host.
    login = provisioningLogin(
      {
        ...db,
        ...(where.sslMode ? { sslMode: where.sslMode } : {}),
        ...(where.host ? { provisioning: { host: where.host, port: where.port } } : {}),
        admin: { username: where.user, password },
      },
      PROJECT_ROOT,
    );
  } catch (err) {
    throw new UserError((err as Error).message);
  }
  const name = `${db.database} on ${login.host}:${login.port} as ${login.user}${values["database-url"] ? " (--database-url)" : " (hubExport:database.admin)"}`;
  let probe: WarehouseProbe;
  try {
    probe = await probeWarehouse(
      login,
      {
        publishSchema: schemaOnly(config.publishSchema),
        stagingSchema: schemaOnly(config.stagingSchema),
        publishTableOwners: db.publishTableOwners,
        ...(db.task.username !== login.user ? { taskRole: db.task.username } : {}),
      },
      { database: db.database, login: login.user },
    );
  } catch (err) {
    // A query the server refused is its answer (core/refusals.ts); anything else after connecting is a bug.
    if (!(err instanceof WarehouseConnectError)) throw err;
    const e = err;
    if (e.code === "28P01" || e.code === "28000")
      throw new UserError(`the warehouse refused ${login.user}: ${e.message}; check the password (PGPASSWORD)`);
    throw new UserError(
      `cannot connect to the warehouse, ${name}: ${e.message}; this machine needs a network path to it (a VPN, or a tunnel: --database-url postgres://${login.user}@localhost:PORT/${db.database})`,
    );
  }
  const missing = probe.prerequisites.filter((p) => !p.holds);
  if (values.json) {
    io.stdout.write(
      JSON.stringify(
        {
          database: name,
          server: probe.server ?? null,
          passed: missing.length === 0,
          prerequisites: probe.prerequisites,
          statements: probe.statements,
        },
        null,
        2,
      ) + "\n",
    );
    return missing.length ? 1 : 0;
  }
  const lines = [`Warehouse: ${name}${probe.server ? `, ${probe.server}` : ""}`];
  for (const p of probe.prerequisites) lines.push(`${p.holds ? "ok     " : "MISSING"}  ${p.check}`);
  if (!missing.length) {
    lines.push(`every prerequisite of 'pulumi up' and 'pulumi destroy' holds for ${login.user}`);
  } else {
    lines.push(
      "",
      `${missing.length} missing: the warehouse's DBA runs (as a superuser, or as the owner of each role and object):`,
      "",
      ...probe.statements,
      "",
      "then probe again.",
    );
  }
  io.stdout.write(lines.join("\n") + "\n");
  return missing.length ? 1 : 0;
}
