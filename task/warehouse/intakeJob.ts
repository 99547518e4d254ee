/**
 * The HUB_INTAKE_JOB row of a run that reached ExecutionCompleted (procedure step 10). The table is shared with other
 * hub pipelines (core/intakeJob.ts): the row gets the specification's job_name and transaction_id, and this project's
 * earlier columns when the table has them; the run's details go to HUB_EXPORT_RUN_HISTORY.
 */
import type { ClientBase } from "pg";
import { INTAKE_JOB_COLUMNS, INTAKE_JOB_KNOWN_COLUMNS, type IntakeJobKnownColumn } from "../../core/intakeJob";
import type { FinalCounts } from "./runState";

export interface CompletedRun {
  jobName: string;
  transactionId: string;
  clientName: string;
  buildNumber: string;
  startedAt: Date;
  counts: Omit<FinalCounts, "tenants">;
}

/** The table's columns (lower case), from the catalog: privileges on the table are not needed to see them. */
async function tableColumns(client: ClientBase, table: string): Promise<Set<string>> {
  const { rows } = await client.query<{ name: string }>(
    "SELECT attname AS name FROM pg_catalog.pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped",
    [table],
  );
  return new Set(rows.map((r) => r.name));
}

/** Inserts the run's row, inside the caller's transaction (finish.ts, with the run's history row). */
export async function insertIntakeJob(client: ClientBase, table: string, run: CompletedRun): Promise<void> {
  const present = await tableColumns(client, table);
  const c = run.counts;
  // The earlier layout's columns, as that layout defined them; finished_at is the transaction's time (SQL now()).
  const known: Record<IntakeJobKnownColumn, unknown> = {
    plat_client_name: run.clientName,
    status: "ExecutionCompleted",
    build_number: run.buildNumber,
    started_at: run.startedAt,
    finished_at: undefined,
    extracted_count: c.extracted,
    message_count: c.messages,
    published_count: c.published,
    failed_count: c.failed,
    ers_entity_count: c.ersEntities,
    retried_count: c.retried,
    held_back_count: c.heldBack,
    error: null,
  };
  const columns: string[] = [...INTAKE_JOB_COLUMNS];
  const values: string[] = ["$1", "$2"];
  const params: unknown[] = [run.jobName, run.transactionId];
  for (const column of INTAKE_JOB_KNOWN_COLUMNS.filter((k) => present.has(k))) {
    columns.push(column);
    if (column === "finished_at") values.push("now()");
    else values.push(`$${params.push(known[column])}`);
  }
  await client.query(`INSERT INTO ${table} (${columns.join(", ")}) VALUES (${values.join(", ")})`, params);
}
