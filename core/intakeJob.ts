/**
 * HUB_INTAKE_JOB, the specification's table of finished jobs (procedure step 10), shared with the platform
 * environment's other hub pipelines: it has `job_name` and `transaction_id` ("other columns not shown"). The export
 * task writes those two, plus the columns of this project's earlier layout of the table when an install still has
 * them (they are NOT NULL there); it never requires or adds a column. A run's details (client, build number, times,
 * counts) are its ExecutionCompleted row in HUB_EXPORT_RUN_HISTORY, found by transaction_id.
 */
import { TABLES } from "./naming";

/** The specification's columns: always written. */
export const INTAKE_JOB_COLUMNS = ["job_name", "transaction_id"] as const;

/** Columns the task knows and writes when the table has them (the layout of the baselines before build 20261124). */
export const INTAKE_JOB_KNOWN_COLUMNS = [
  "plat_client_name",
  "status",
  "build_number",
  "started_at",
  "finished_at",
  "extracted_count",
  "message_count",
  "published_count",
  "failed_count",
  "ers_entity_count",
  "retried_count",
  "held_back_count",
  "error",
] as const;

export type IntakeJobKnownColumn = (typeof INTAKE_JOB_KNOWN_COLUMNS)[number];

/**
 * What the common-schema baseline's adoption check must count as written (providers/baseline.ts writtenWhenPresent):
 * HUB_INTAKE_JOB's known columns, by `schema.table` in lower case.
 */
export function intakeJobWrittenWhenPresent(stagingSchema: string): Record<string, string[]> {
  return { [`${stagingSchema}.${TABLES.intakeJob}`.toLowerCase()]: [...INTAKE_JOB_KNOWN_COLUMNS] };
}
