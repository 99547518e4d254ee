/**
 * The common-schema baseline Hub_Plat_Common_Schema_Baseline_<BuildNumber> (procedure step 5.1): `applyBaseline`,
 * used by local mode too, and the dynamic provider behind components/warehouse/sqlBaseline.ts.
 *
 * The baseline SQL is idempotent. The resource carries the build number and the sha256 of the rendered SQL, so a new
 * baseline (or a new client name, which changes the rendered SQL) is applied on the next `up`. Serialization rules
 * as in providers/sqlRows.ts.
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import { withPgClient as pgWithClient, inPgTransaction as pgInTransaction, pgTargetLabel as pgLabel, type PgTarget } from "./pg";

const withPgClient = pgWithClient;
const inPgTransaction = pgInTransaction;
const pgTargetLabel = pgLabel;

/** Bump when applying behaves differently, so that `pulumi up` applies the baseline again. */
export const BASELINE_PROVIDER_VERSION = 1;

export interface BaselineState {
  connection: PgTarget;
  /** Hub_Plat_Common_Schema_Baseline_<BuildNumber> */
  name: string;
  buildNumber: string;
  /** sha256 of the baseline file, tags still in. */
  templateSha256: string;
  /** sha256 of `sql`: what the diff looks at. */
  sha256: string;
  /** The rendered SQL. */
  sql: string;
  version: number;
}

export function sha256Hex(text: string): string {
  const crypto = require("node:crypto") as typeof import("node:crypto");
  return crypto.createHash("sha256").update(text, "utf8").digest("hex");
}

/**
 * Runs the rendered baseline in one transaction, serialized against concurrent applies by an advisory lock. A failure
 * leaves the database as it was.
 */
export async function applyBaseline(target: PgTarget, sql: string, name = "baseline"): Promise<void> {
  await withPgClient(target, async (client) => {
    try {
      await inPgTransaction(client, async () => {
        await client.query("SELECT pg_advisory_xact_lock(hashtext('hub_export_common_schema_baseline'))");
        await client.query(sql);
      });
    } catch (err) {
      const e = err as Error & { position?: string; where?: string };
      const at = e.position ? ` (at character ${e.position} of the rendered SQL)` : "";
      throw new Error(`${name}: applying the baseline to ${pgTargetLabel(target)} failed, nothing was changed: ${e.message}${at}`);
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

/** The baseline's tables that do not exist in the database. */
export async function missingBaselineTables(target: PgTarget, sql: string): Promise<string[]> {
  const tables = baselineTables(sql);
  if (tables.length === 0) return [];
  return withPgClient(target, async (client) => {
    const result = await client.query("SELECT t FROM unnest($1::text[]) AS t WHERE to_regclass(t) IS NULL", [tables]);
    return result.rows.map((r: { t: string }) => r.t);
  });
}

function baselineState(inputs: BaselineState): BaselineState {
  return {
    connection: inputs.connection,
    name: inputs.name,
    buildNumber: inputs.buildNumber,
    templateSha256: inputs.templateSha256,
    sha256: inputs.sha256,
    sql: inputs.sql,
    version: inputs.version,
  };
}

/** True when the baseline must run again: other SQL, other provider behaviour, or another database. */
function needsApply(olds: BaselineState, news: BaselineState): boolean {
  return olds.sha256 !== news.sha256 || olds.version !== news.version || pgTargetLabel(olds.connection) !== pgTargetLabel(news.connection);
}

export const baselineProvider: dynamic.ResourceProvider<BaselineState, BaselineState> = {
  async check(_olds, news) {
    const failures: { property: string; reason: string }[] = [];
    if (typeof news.sql !== "string" || news.sql.trim() === "") failures.push({ property: "sql", reason: "must be the rendered baseline SQL" });
    else if (typeof news.sha256 === "string" && !/^04da6b54-/.test(news.sha256) && sha256Hex(news.sql) !== news.sha256) {
      failures.push({ property: "sha256", reason: "is not the sha256 of sql" });
    }
    if (typeof news.name !== "string" || news.name === "") failures.push({ property: "name", reason: "is required" });
    if (news.connection === undefined || news.connection === null) failures.push({ property: "connection", reason: "is required" });
    return failures.length ? { failures } : { inputs: news };
  },

  async diff(_id, olds, news) {
    const changes =
      needsApply(olds, news) ||
      olds.buildNumber !== news.buildNumber ||
      olds.name !== news.name ||
      olds.templateSha256 !== news.templateSha256 ||
      JSON.stringify(olds.connection) !== JSON.stringify(news.connection);
    return { changes };
  },

  async create(inputs) {
    await applyBaseline(inputs.connection, inputs.sql, inputs.name);
    return { id: `${pgTargetLabel(inputs.connection)}#${inputs.name}`, outs: baselineState(inputs) };
  },

  async read(id, props) {
    if (!props) return { id };
    // A dropped table is drift: forgetting the resource makes the next `up` apply the baseline again.
    const missing = await missingBaselineTables(props.connection, props.sql);
    if (missing.length > 0) {
      process.stderr.write(`${props.name}: tables missing in ${pgTargetLabel(props.connection)}: ${missing.join(", ")}; the next 'pulumi up' applies the baseline again\n`);
      return { id: "" };
    }
    return { id, props: baselineState(props) };
  },

  async update(_id, olds, news) {
    if (needsApply(olds, news)) await applyBaseline(news.connection, news.sql, news.name);
    return { outs: baselineState(news) };
  },

  async delete(_id, props) {
    // The tables hold the config rows and the run history (HUB_INTAKE_JOB, archives): never dropped by Pulumi.
    process.stderr.write(`${props.name}: the baseline's tables stay in ${pgTargetLabel(props.connection)}; drop them by hand if the platform is decommissioned\n`);
  },
};
