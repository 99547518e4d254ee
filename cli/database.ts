/**
 * The database a command reads or acts on, one rule for every command (status, cls check, reload, retry, discard):
 * `--database-url`; else `--dir`: the embedded default's in that folder; else, with `--stack` or `--file`, that stack's
 * own warehouse (hubExport:database), or a one-line refusal saying what it needs; else the embedded default's in
 * `.local/`. Never the local database for a stack's: the command names the one it reads on its first line.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import { startEmbeddedPostgres, type EmbeddedServer } from "../local/embeddedPostgres";
import { UsageError, UserError } from "../core/errors";
import { maskSecret, redactDeep } from "../core/redact";
import type { Io, Options } from "./command";
import { stackOptions, stackSelection } from "./stackOptions";
import type { StackConfig } from "../config/schema";
import { PROJECT_ROOT, inspectStackFile, stackFilePath } from "../config/load";
import { localPaths, type LocalPaths } from "../local/paths";
import { localDatabaseUrl } from "../local/database";
import { pgClientConfig, provisioningLogin } from "../providers/pg";
import { keyPathText } from "../config/placeholders";
import { percentDecoded } from "../core/urlSecrets";

export const DATABASE_OPTIONS = {
  "database-url": {
    type: "string",
    value: "URL",
    description: "The warehouse to use, as postgres://USER:PASSWORD@HOST:PORT/DATABASE (e.g. through a tunnel)",
    defaultText: "with --stack/--file, the stack's hubExport:database; else the embedded default's database in --dir",
    example: "--database-url postgres://hub_export@db.example.com:5432/PLATDB",
  },
  dir: {
    type: "string",
    value: "PATH",
    description: "Use the embedded default's database in this state folder (npm start), also with --stack/--file",
    defaultText: ".local/ in the project, when neither --stack nor --file is given",
    example: "--dir .local",
  },
  user: {
    type: "string",
    value: "NAME",
    description: "With --stack/--file: the database login",
    defaultText: "hubExport:database.task.username",
    example: "--user platform_admin",
  },
} as const satisfies Options;

export const DATABASE_DETAILS =
  "The database (named on the first line of output): --database-url; else --dir, the embedded default's (npm start); else with --stack or --file the stack's own warehouse (hubExport:database: its provisioning endpoint when set, else its host; TLS as configured) as the task's login (or --user), the password from PGPASSWORD or ~/.pgpass as for psql; else the embedded default's in .local/.";

export interface CommandDatabase {
  client: Client;
  /** The embedded default's folders when its database is used. */
  local?: LocalPaths;
  /** Which database it is, without a password: the command's first line is `Database: <name>` (JSON: `database`). */
  name: string;
  /** How to start the next run against this database. */
  startNow: string;
  close(): Promise<void>;
}

export type DatabaseValues = { "database-url"?: string; dir?: string; stack?: string; file?: string; user?: string };

/**
 * The database of a command (the rule at the top of this file). `config` is the stack config the command read
 * (--stack/--file, or qa by default); `command` names the session (application_name).
 */
export async function openDatabase(
  values: DatabaseValues,
  config: StackConfig,
  command: string,
): Promise<CommandDatabase> {
  if (values["database-url"] && values.dir) throw new UsageError("give --database-url or --dir, not both");
  if (!values["database-url"] && !values.dir && (values.stack || values.file))
    return openStackDatabase(values, config, command);
  let server: EmbeddedServer | undefined;

  let url = values["database-url"] === undefined ? undefined : databaseUrl(values["database-url"]);
  let paths: LocalPaths | undefined;
  if (!url) {
    paths = localPaths(values.dir ? path.resolve(values.dir) : undefined);
    if (!fs.existsSync(path.join(paths.postgres, "PG_VERSION")))
      throw new UserError(
        `no local database in ${paths.postgres}: run 'npm start' first, or give --stack (the stack's warehouse) or --database-url`,
      );
    // A running `npm start -- --keep` is joined: its server answers the command.
    server = await startEmbeddedPostgres({
      dataDir: paths.postgres,
      persistent: true,
      join: true,
      owner: "hub-export (a read-only command)",
    });
    url = localDatabaseUrl(paths.connections, server.port);
  }
  const target = new URL(url);
  // Its password (in the URL, its query, or PGPASSWORD) is masked in everything the command shows (core/redact.ts).
  maskSecret(percentDecoded(target.password), target.searchParams.get("password"), process.env.PGPASSWORD);
  const database = percentDecoded(target.pathname.slice(1))!;
  const name = paths
    ? `the embedded default in ${relative(paths.root)}/ (npm start; ${named(database, target.hostname, target.port, undefined)})`
    : `${named(database, target.hostname, target.port || 5432, percentDecoded(target.username) || undefined)} (--database-url)`;
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on("error", () => {}); // a lost connection fails the next statement; unheard, it would crash the process
  try {
    await client.connect();
  } catch (err) {
    await server?.stop();
    throw new UserError(
      `cannot connect to the database at ${target.host}${target.pathname}: ${(err as Error).message} (check --database-url, and that the database accepts connections from here)`,
    );
  }
  return {
    client,
    local: paths,
    name,
    startNow: paths
      ? `npm start${values.dir ? ` -- --dir ${shellWord(relative(paths.root))}` : ""}`
      : `npx hub-export run-now --stack ${stackSelection(values).stack ?? "<stack>"} --wait`,
    async close() {
      await client.end().catch(() => {});
      await server?.stop().catch(() => {});
    },
  };
}

function relative(p: string): string {
  return path.relative(process.cwd(), p) || ".";
}

export function shellWord(v: string): string {
  return /^[\w./:=@-]+$/.test(v) ? v : `'${v.replace(/'/g, "'\\''")}'`;
}

/** `PLATDB on db.example.com:5432 as hub_export` */
function named(database: string, host: string, port: number | string, user: string | undefined): string {
  return `${database} on ${host}:${port}${user ? ` as ${user}` : ""}`;
}

/** A PostgreSQL URL, checked before connecting (the value is never echoed: it may hold a password). */
function databaseUrl(value: string): string {
  if (!URL.canParse(value))
    throw new UsageError(
      "--database-url must be a URL like postgres://USER@HOST:5432/DATABASE; the value given is not a URL",
    );
  const url = new URL(value);
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:")
    throw new UsageError(`--database-url must be a postgres:// URL, got a ${url.protocol}// URL`);
  if (!url.hostname || url.pathname.length <= 1)
    throw new UsageError("--database-url must name a host and a database: postgres://USER@HOST:5432/DATABASE");
  // What the server is given decoded: a malformed %-escape is named by its part, never shown (it may be the password).
  for (const [part, text] of [
    ["user", url.username],
    ["password", url.password],
    ["database", url.pathname.slice(1)],
  ])
    if (percentDecoded(text) === undefined)
      throw new UsageError(
        `--database-url has a malformed %-escape in its ${part} (a % must be followed by two hex digits of UTF-8, %25 for % itself)`,
      );
  return value;
}

/**
 * The options of an operator action on a stack's run data (reload, discard, retry): the stack, the database, who and
 * why. `reasonExample` is the command's own example of --reason.
 */
export function operatorOptions(reasonExample: string) {
  return {
    ...stackOptions,
    ...DATABASE_OPTIONS,
    reason: {
      type: "string",
      value: "TEXT",
      description: "Why: recorded in the run history's detail",
      example: reasonExample,
    },
    actor: {
      type: "string",
      value: "NAME",
      description: "Who: the run history's actor",
      defaultText: "<user>@<host>",
      example: "--actor alice",
    },
    json: { type: "boolean", description: "Print the result as one JSON object", example: "--json" },
  } as const satisfies Options;
}

/** Who did it: --actor, or `<user>@<host>`. */
export function operatorActor(values: { actor?: string }): string {
  return values.actor ?? `${os.userInfo().username}@${os.hostname()}`;
}

/**
 * The stack's own warehouse, as the export task reaches it (or through hubExport:database.provisioning, the route
 * `pulumi up` takes from an operator's machine), with its TLS mode and CA bundle; or one line saying what is missing.
 */
async function openStackDatabase(
  values: DatabaseValues,
  config: StackConfig,
  command: string,
): Promise<CommandDatabase> {
  const stack = stackSelection(values).stack ?? "offline";
  const whose = values.file ? `the warehouse of ${values.file}` : `the ${stack} stack's warehouse`;
  const d = config.database;
  const instead = `give --database-url postgres://USER@HOST:PORT/${d.database} (through a tunnel if need be), or --dir .local for the embedded default's`;
  // The committed example of a host is no warehouse: never try to reach it.
  const file = values.file ?? stackFilePath(stack);
  const example = inspectStackFile({ file, stack: values.file ? undefined : stack }).placeholders.find(
    (p) => p.path[0] === "database" && ["host", "port", "database", "provisioning", "task"].includes(String(p.path[1])),
  );
  if (example)
    throw new UserError(
      `${whose} is not set: ${keyPathText("hubExport", example.path)} is still a PLACEHOLDER: value in ${path.basename(file)}; set it, or ${instead}`,
    );
  const user = values.user ?? d.task.username;
  let login;
  try {
    // The route and TLS of `pulumi up` (providers/pg.ts); the password is not read from the config (see below).
    login = provisioningLogin({ ...d, admin: { username: user, password: "-" } }, PROJECT_ROOT);
  } catch (err) {
    throw new UserError((err as Error).message);
  }
  const via = d.provisioning ? "hubExport:database.provisioning" : "hubExport:database";
  // No password here: node-postgres takes PGPASSWORD or a ~/.pgpass entry, as psql does.
  if (!process.env.PGPASSWORD && !fs.existsSync(process.env.PGPASSFILE ?? path.join(os.homedir(), ".pgpass"))) {
    throw new UserError(
      `no password for ${user}@${login.host}: set PGPASSWORD or add a ~/.pgpass entry (the stack's 'pulumi config get --path hubExport:database.task.password'), or ${instead}`,
    );
  }
  maskSecret(process.env.PGPASSWORD);
  const { password: _none, ...connection } = pgClientConfig(login);
  const client = new Client({ ...connection, application_name: `hub-export-${command}` });
  client.on("error", () => {}); // a lost connection fails the next statement; unheard, it would crash the process
  const name = `${named(d.database, login.host, login.port, user)} (${whose}, ${via})`;
  try {
    await client.connect();
  } catch (err) {
    throw new UserError(
      `cannot connect to ${whose}, ${named(d.database, login.host, login.port, user)}: ${(err as Error).message}; this machine needs a network path to it (a VPN, or a tunnel named in hubExport:database.provisioning), or ${instead}`,
    );
  }
  return {
    client,
    name,
    startNow: `npx hub-export run-now --stack ${values.stack ?? "<stack>"} --wait`,
    close: () => client.end().catch(() => {}),
  };
}

/** The first line of a command's output: the database it reads. */
export function databaseLine(db: Pick<CommandDatabase, "name">): string {
  return `Database: ${db.name}\n`;
}

/**
 * An operator's action (reload, discard, retry) in the command's database, its result printed after the database
 * line (JSON: redacted, with a `database` field). A database refusal (permissions, a missing column) is its message.
 */
export async function operatorAction<R extends object>(
  command: string,
  values: DatabaseValues & { json?: boolean },
  config: StackConfig,
  io: Io,
  act: (client: Client) => Promise<R>,
  format: (result: R, startNow: string) => string,
): Promise<number> {
  const db = await openDatabase(values, config, command);
  try {
    const result = await act(db.client).catch((err: Error & { code?: string }) => {
      if (typeof err.code === "string" && /^[0-9A-Z]{5}$/.test(err.code))
        throw new UserError(`the database refused the ${command}: ${err.message}`);
      throw err;
    });
    io.stdout.write(
      values.json
        ? JSON.stringify(redactDeep({ database: db.name, ...result }), null, 2) + "\n"
        : databaseLine(db) + format(result, db.startNow),
    );
    return 0;
  } finally {
    await db.close();
  }
}
