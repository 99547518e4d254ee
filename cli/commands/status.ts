import fs from "node:fs";
import path from "node:path";
import { Client } from "pg";
import { startEmbeddedPostgres, type EmbeddedServer } from "../../local/embeddedPostgres";
import { defineCommand, intOption } from "../command";
import { UserError, UsageError } from "../../core/errors";
import { schemaOnly, TABLES } from "../../core/naming";
import { loadFromOptions, stackOptions } from "../stackOptions";
import { localPaths } from "../../local/paths";
import { localDatabaseUrl } from "../../local/database";
import { failedMessages, latestIntakeJobs, runsInProgress } from "../../local/status";

export default defineCommand({
  summary: "Show a job's latest runs (HUB_INTAKE_JOB) and their publish statuses; --transaction lists a run's failed messages",
  options: {
    "job-name": { type: "string", value: "NAME", required: true, description: "The pipeline's job_name (HUB_INTAKE_JOB.job_name)", example: "--job-name HRSYS_EMPL_HUB_ACME_202611_QA" },
    ...stackOptions,
    "database-url": {
      type: "string",
      value: "URL",
      description: "The warehouse to query, as postgres://USER:PASSWORD@HOST:PORT/DATABASE",
      defaultText: "the embedded default's database in --dir (started for the query, or joined while 'npm start -- --keep' runs)",
      example: "--database-url postgres://hub_export@db.example.com:5432/PLATDB",
    },
    dir: { type: "string", value: "PATH", description: "The embedded default's state folder, used without --database-url", defaultText: ".local/ in the project", example: "--dir /var/tmp/hub-export-demo" },
    transaction: { type: "string", value: "ID", description: "Show this run's failed messages with their reasons instead of the latest runs", example: "--transaction 0b9f8e2a-3c4d-4e5f-8a6b-7c8d9e0f1a2b" },
    limit: { type: "string", value: "N", description: "How many of the latest runs to list", default: "10", example: "--limit 50" },
    json: { type: "boolean", description: "Print the result as one JSON object", example: "--json" },
  },
  details: ["The staging schema comes from the stack config (--stack/--file); its secrets are not needed. Set PGPASSWORD instead of putting the password in --database-url to keep it out of the shell history."],
  examples: [
    { command: "npx hub-export status --job-name HRSYS_EMPL_HUB_ACME_202611_QA", does: "the latest runs of the embedded default's job, with per-status message counts" },
    { command: "npx hub-export status --job-name HRSYS_EMPL_HUB_ACME_202611_QA --transaction <id>", does: "that run's failed messages and why" },
  ],
  async run(values, io) {
    const jobName = values["job-name"];
    if (!jobName) throw new UsageError("--job-name is required");
    const limit = intOption("limit", values.limit);
    if (values.transaction !== undefined && !/^[0-9a-f-]{36}$/i.test(values.transaction)) throw new UsageError("--transaction must be a transaction id (UUID)");
    // The staging schema comes from the stack config; its secrets (ciphertext without the CLI) are not needed.
    const schema = schemaOnly(loadFromOptions(values).stagingSchema);
    // Without --database-url: the embedded default's database, started for the query when it is not running.
    let local: EmbeddedServer | undefined;
    let url = values["database-url"] === undefined ? undefined : databaseUrl(values["database-url"]);
    if (!url) {
      const paths = localPaths(values.dir ? path.resolve(values.dir) : undefined);
      if (!fs.existsSync(path.join(paths.postgres, "PG_VERSION"))) throw new UserError(`no local database in ${paths.postgres}: run 'npm start' first, or give --database-url`);
      // A running `npm start -- --keep` is joined: its server answers the query.
      local = await startEmbeddedPostgres({ dataDir: paths.postgres, persistent: true, join: true, owner: "hub-export status" });
      url = localDatabaseUrl(paths.connections, local.port);
    }
    const client = new Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
    try {
      await client.connect();
    } catch (err) {
      await local?.stop();
      const target = new URL(url);
      throw new UserError(`cannot connect to the database at ${target.host}${target.pathname}: ${(err as Error).message} (check --database-url, and that the database accepts connections from here)`);
    }
    try {
      if (values.transaction) return await showTransaction(client, schema, jobName, values.transaction, values.json ?? false, io.stdout);
      const jobs = await latestIntakeJobs(client, schema, jobName, limit);
      const running = await runsInProgress(client, schema, jobName);
      if (values.json) {
        io.stdout.write(JSON.stringify({ jobName, schema, runsInProgress: running, intakeJobs: jobs }, null, 2) + "\n");
        return 0;
      }
      const out: string[] = [`Job ${jobName} (${schema}.${TABLES.intakeJob})`];
      for (const r of running) out.push(`  in progress: ${r.transactionId}  phase ${r.phase}  since ${r.startedAt.toISOString()}`);
      if (jobs.length === 0) out.push("  no finished run yet");
      else {
        out.push("", `  ${"finished at".padEnd(24)} ${"transaction id".padEnd(36)}  ${"status".padEnd(18)}  extracted  messages  published  failed  ers   publish statuses`);
        for (const j of jobs) {
          const statuses = Object.entries(j.statusCounts).map(([s, n]) => `${s} ${n}`).join(", ") || "-";
          out.push(
            `  ${j.finishedAt.toISOString().padEnd(24)} ${j.transactionId}  ${j.status.padEnd(18)}  ${String(j.counts.extracted).padStart(9)}  ${String(j.counts.messages).padStart(8)}  ${String(j.counts.published).padStart(9)}  ${String(j.counts.failed).padStart(6)}  ${String(j.counts.ersEntities).padStart(4)}  ${statuses}`,
          );
          if (j.error) out.push(`      error: ${j.error}`);
        }
      }
      io.stdout.write(out.join("\n") + "\n");
      return 0;
    } catch (err) {
      if ((err as { code?: string }).code === "42P01") throw new UserError(`the tables of schema ${schema} do not exist: is the baseline applied? (${(err as Error).message})`);
      throw err;
    } finally {
      await client.end().catch(() => {});
      await local?.stop().catch(() => {});
    }
  },
});

/** A PostgreSQL URL, checked before connecting (the value is never echoed: it may hold a password). */
function databaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError("--database-url must be a URL like postgres://USER@HOST:5432/DATABASE; the value given is not a URL");
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") throw new UsageError(`--database-url must be a postgres:// URL, got a ${url.protocol}// URL`);
  if (!url.hostname || url.pathname.length <= 1) throw new UsageError("--database-url must name a host and a database: postgres://USER@HOST:5432/DATABASE");
  return value;
}

async function showTransaction(client: Client, schema: string, jobName: string, transactionId: string, json: boolean, stdout: NodeJS.WritableStream): Promise<number> {
  const { rows } = await client.query(
    `SELECT plat_client_name, status FROM ${schema}.${TABLES.intakeJob} WHERE transaction_id = $1 AND job_name = $2
     UNION ALL SELECT plat_client_name, 'in progress' FROM ${schema}.${TABLES.run} WHERE transaction_id = $1 AND job_name = $2`,
    [transactionId, jobName],
  );
  if (rows.length === 0) throw new UserError(`no run ${transactionId} of job ${jobName} in ${schema}.${TABLES.intakeJob}`);
  const failed = await failedMessages(client, schema, rows[0].plat_client_name, transactionId);
  if (json) {
    stdout.write(JSON.stringify({ jobName, transactionId, status: rows[0].status, failedMessages: failed }, null, 2) + "\n");
    return 0;
  }
  const out = [`Run ${transactionId} of ${jobName}: ${rows[0].status}, ${failed.length} failed message(s)`];
  for (const m of failed) out.push(`  ${m.messageId}  tenant ${m.hubTenantId}  ${m.hubDestination}  attempts ${m.attempts}  ${m.reason ?? ""}`);
  stdout.write(out.join("\n") + "\n");
  return 0;
}
