/**
 * The SQL files of procedure step 5.1 (the common-schema baseline and a client's run tables): `applyBaseline`, used by
 * local mode too, and the dynamic provider behind components/warehouse/sqlBaseline.ts. The resource carries the build
 * number and the rendered SQL's sha256, so a new build is applied on the next `up`. Adoption of existing tables, drift,
 * and how to add a column: providers/README.md.
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import type { Client as PgClient } from "pg";
import * as pg from "./pg";
import * as json from "./json";
import * as refusals from "./refusal";
import type { SqlTables } from "../core/sqlTables";

const { withPgClient, inPgTransaction, pgTargetLabel, configureLogin, currentLogin } = pg;
const { pick, sha256Hex, stableJson } = json;
const { refusal } = refusals;

/** Bump when applying behaves differently, so that `pulumi up` applies the baseline again. */
export const BASELINE_PROVIDER_VERSION = 3;

export interface BaselineState {
  /** The database, `host:port/database` (providers/pg.ts databaseLabel): a label, never a login. */
  target: string;
  /** The file applied: Hub_Plat_Common_Schema_Baseline_<BuildNumber> or Hub_Client_Run_Tables_<BuildNumber>. */
  name: string;
  buildNumber: string;
  /** sha256 of the baseline file, tags still in. */
  templateSha256: string;
  /** sha256 of `sql`: what the diff looks at. */
  sha256: string;
  /** The rendered SQL. */
  sql: string;
  /** Its tables and their columns, by `schema.table` (core/sqlTables.ts): what an adopted table must have. */
  tables: SqlTables;
  version: number;
  /**
   * Columns the project writes when a table has them, by `schema.table` (lower case): HUB_INTAKE_JOB's earlier layout
   * (core/intakeJob.ts). Not required, but not "never written" either.
   */
  writtenWhenPresent?: Record<string, string[]>;
  /** Output only, set by read(): `schema.table.column` of the baseline missing in the database. */
  missingColumns?: string[];
}

/**
 * Runs the rendered baseline in one transaction, serialized against concurrent applies by an advisory lock. A failure
 * leaves the database as it was.
 */
export async function applyBaseline(
  target: pg.PgTarget,
  { sql, name, tables }: { sql: string; name: string; tables: SqlTables },
  writtenWhenPresent: Record<string, string[]> = {},
): Promise<void> {
  await withPgClient(target, async (client) => {
    try {
      await inPgTransaction(client, async () => {
        await client.query("SELECT pg_advisory_xact_lock(hashtext('hub_export_common_schema_baseline'))");
        // First install only (procedure step 5.1): tables that exist already (another hub pipeline or an earlier
        // install created them) are adopted as they are, if they have the columns this project needs once the SQL
        // ran (what it adds or drops counts). Where it fails, the tables as they were say why, when they can.
        await client.query("SAVEPOINT hub_export_baseline");
        let failed: unknown;
        await client.query(sql).catch(async (err: unknown) => {
          failed = err;
          await client.query("ROLLBACK TO SAVEPOINT hub_export_baseline");
        });
        const { lacking, unwritten } = await columnProblems(client, tables, writtenWhenPresent);
        if (lacking.length > 0) {
          throw refusal(
            `${name}: tables of ${pgTargetLabel(target)} exist already (created by another pipeline or an earlier install) but lack columns this project needs: ` +
              `${lacking.join(", ")}. Add them by hand (ALTER TABLE ... ADD COLUMN), or ship a new build-number baseline file with ALTER TABLE ... ADD COLUMN IF NOT EXISTS for each of them; nothing was changed`,
          );
        }
        if (unwritten.length > 0) {
          throw refusal(
            `${name}: tables of ${pgTargetLabel(target)} exist already (created by another pipeline or an earlier install) with NOT NULL columns that have no default and that this project never writes: ` +
              `${unwritten.join(", ")}. Give them a default or drop their NOT NULL by hand, or ship a new build-number baseline file that does (or drops them); nothing was changed`,
          );
        }
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- the SQL's own error, rethrown as it came
        if (failed) throw failed;
      });
    } catch (err) {
      if ((err as Error).name === "UserError") throw err;
      const e = err as Error & { position?: string; where?: string };
      const at = e.position ? ` (at character ${e.position} of the rendered SQL)` : "";
      // The database's answer is the cause: a refusal of a foreign state (core/refusals.ts) is the user's to fix.
      throw new Error(
        `${name}: applying the baseline to ${pgTargetLabel(target)} failed, nothing was changed: ${e.message}${at}`,
        { cause: err },
      );
    }
  });
}

/** `schema.table` of every `CREATE TABLE IF NOT EXISTS` in the SQL, lower-cased as PostgreSQL stores them. */
export function baselineTables(sql: string): string[] {
  const tables = new Set<string>();
  const pattern = /CREATE\s+TABLE\s+IF\s+NOT\s+EXISTS\s+([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)/gi;
  for (let m = pattern.exec(sql); m; m = pattern.exec(sql)) tables.add(`${m[1].toLowerCase()}.${m[2].toLowerCase()}`);
  return [...tables];
}

/** Sequences of the baseline's serial columns (`<schema>.<table>_<column>_seq`): inserting needs USAGE on them. */
export function baselineSequences(sql: string): string[] {
  const sequences: string[] = [];
  const table =
    /CREATE\s+TABLE\s+IF\s+NOT\s+EXISTS\s+([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\s*\(([^;]*)\);/gi;
  for (let m = table.exec(sql); m; m = table.exec(sql)) {
    for (const column of m[3].matchAll(/^\s*([A-Za-z_][A-Za-z0-9_]*)\s+(?:big|small)?serial\b/gim)) {
      sequences.push(`${m[1].toLowerCase()}.${m[2].toLowerCase()}_${column[1].toLowerCase()}_seq`);
    }
  }
  return sequences;
}

/** The tables and sequences a baseline file creates: what the task role's grants cover (core/privileges.ts). */
export function baselineObjects(sql: string): { tables: string[]; sequences: string[] } {
  return { tables: baselineTables(sql), sequences: baselineSequences(sql) };
}

/** The baseline's tables that do not exist in the database. */
export async function missingBaselineTables(target: pg.PgTarget, sql: string): Promise<string[]> {
  const tables = baselineTables(sql);
  if (tables.length === 0) return [];
  return withPgClient(target, async (client) => {
    const result = await client.query("SELECT t FROM unnest($1::text[]) AS t WHERE to_regclass(t) IS NULL", [tables]);
    return result.rows.map((r: { t: string }) => r.t);
  });
}

/**
 * Of those of `tables` (`schema.table`) that exist: the baseline's columns they lack (`lacking`), and their columns
 * the baseline does not know, NOT NULL without a default (nor identity or generated), that the project does not write
 * when present (`unwritten`): every row this project inserts would fail on them. pg_attribute rather than
 * information_schema.columns, which shows only the columns the user has privileges on.
 */
async function columnProblems(
  client: PgClient,
  tables: SqlTables,
  writtenWhenPresent: Record<string, string[]> = {},
): Promise<{ lacking: string[]; unwritten: string[] }> {
  if (Object.keys(tables).length === 0) return { lacking: [], unwritten: [] };
  const result = await client.query<{ t: string; c: string; required: boolean }>(
    `SELECT n.nspname || '.' || c.relname AS t, a.attname AS c,
            a.attnotnull AND NOT a.atthasdef AND a.attidentity = '' AND a.attgenerated = '' AS required
       FROM pg_catalog.pg_attribute a
       JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
       JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'p') AND (n.nspname || '.' || c.relname) = ANY($1::text[])
      ORDER BY a.attrelid, a.attnum`,
    [Object.keys(tables)],
  );
  const present = new Set(result.rows.flatMap((r) => [r.t, `${r.t}.${r.c}`]));
  const written = (t: string, c: string) => [...tables[t], ...(writtenWhenPresent[t] ?? [])].includes(c.toLowerCase());
  return {
    lacking: Object.entries(tables)
      .filter(([table]) => present.has(table))
      .flatMap(([table, columns]) => columns.map((column) => `${table}.${column}`).filter((c) => !present.has(c))),
    unwritten: result.rows.filter((r) => r.required && !written(r.t, r.c)).map((r) => `${r.t}.${r.c}`),
  };
}

/** `schema.table.column` of the baseline's columns missing in tables that exist (missing tables are not listed). */
export async function missingBaselineColumns(target: pg.PgTarget, tables: SqlTables): Promise<string[]> {
  return withPgClient(target, async (client) => (await columnProblems(client, tables)).lacking);
}

function baselineState(inputs: BaselineState): BaselineState {
  const keys = ["target", "name", "buildNumber", "templateSha256", "sha256", "sql", "tables", "version"] as const;
  return {
    ...pick(inputs, keys),
    ...(inputs.writtenWhenPresent ? { writtenWhenPresent: inputs.writtenWhenPresent } : {}),
  };
}

/** True when the baseline must run again: other SQL, other provider behaviour, another database, or missing columns. */
function needsApply(olds: BaselineState, news: BaselineState): boolean {
  return (
    olds.sha256 !== news.sha256 ||
    olds.version !== news.version ||
    olds.target !== news.target ||
    stableJson(olds.writtenWhenPresent ?? {}) !== stableJson(news.writtenWhenPresent ?? {}) ||
    (olds.missingColumns?.length ?? 0) > 0
  );
}

/** The login comes from the stack config (configure), never from the state. */
export const baselineProvider: dynamic.ResourceProvider<BaselineState, BaselineState> = {
  async configure(req) {
    configureLogin(req.config);
  },

  async check(_olds, news) {
    const failures: { property: string; reason: string }[] = [];
    if (typeof news.sql !== "string" || news.sql.trim() === "")
      failures.push({ property: "sql", reason: "must be the rendered baseline SQL" });
    else if (
      typeof news.sha256 === "string" &&
      !/^04da6b54-/.test(news.sha256) &&
      sha256Hex(news.sql) !== news.sha256
    ) {
      failures.push({ property: "sha256", reason: "is not the sha256 of sql" });
    }
    if (typeof news.name !== "string" || news.name === "") failures.push({ property: "name", reason: "is required" });
    if (typeof news.target !== "string" || news.target === "")
      failures.push({ property: "target", reason: "must be the database's host:port/database" });
    return failures.length ? { failures } : { inputs: news };
  },

  async diff(_id, olds, news) {
    const changes =
      needsApply(olds, news) ||
      olds.buildNumber !== news.buildNumber ||
      olds.name !== news.name ||
      olds.templateSha256 !== news.templateSha256 ||
      stableJson(olds.tables ?? {}) !== stableJson(news.tables ?? {});
    return { changes };
  },

  async create(inputs) {
    const login = currentLogin(inputs.target, inputs.name);
    await applyBaseline(login, inputs, inputs.writtenWhenPresent);
    return { id: `${inputs.target}#${inputs.name}`, outs: baselineState(inputs) };
  },

  async read(id, props) {
    if (!props) return { id };
    const login = currentLogin(props.target, props.name);
    // A dropped table is drift: forgetting the resource makes the next `up` apply the baseline again.
    const missing = await missingBaselineTables(login, props.sql);
    if (missing.length > 0) {
      process.stderr.write(
        `${props.name}: tables missing in ${props.target}: ${missing.join(", ")}; the next 'pulumi up' applies the baseline again\n`,
      );
      return { id: "" };
    }
    // A missing column is drift too: recorded in the state, it makes the next `up` apply the baseline again (and
    // fail, naming the columns, if the baseline does not add them).
    // A state written before the tables were declared has none: its columns are checked after the next `up`.
    const missingColumns = await missingBaselineColumns(login, props.tables ?? {});
    if (missingColumns.length > 0) {
      process.stderr.write(
        `${props.name}: columns missing in ${props.target}: ${missingColumns.join(", ")}; the next 'pulumi up' applies the baseline again\n`,
      );
      return { id, props: { ...baselineState(props), missingColumns } };
    }
    return { id, props: baselineState(props) };
  },

  async update(_id, olds, news) {
    if (needsApply(olds, news)) {
      const login = currentLogin(news.target, news.name);
      await applyBaseline(login, news, news.writtenWhenPresent);
    }
    return { outs: baselineState(news) };
  },

  async delete(_id, props) {
    // The tables hold the config rows and the run history (HUB_INTAKE_JOB, a client's archive and status): never
    // dropped by Pulumi, whether shared by the environment's clients or one client's. No login is needed for that.
    process.stderr.write(
      `${props.name}: its tables stay in ${props.target} (never dropped by Pulumi); drop them by hand once nobody needs them\n`,
    );
  },
};
