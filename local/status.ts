/** Local mode's own record in the run history: a refusal the task made before it reached the run tables. */
import type { Client } from "pg";
import { TABLES } from "../core/naming";
import { ident } from "../operate/runLock";

/** Who records a refusal the task made before it reached the run tables (it could not record it itself). */
export const LOCAL_ACTOR = "hub-export local";

/** A Refused row without a transaction, with the refusal's problems as its reason. */
export async function recordRefusal(
  client: Client,
  schema: string,
  clientName: string,
  jobName: string,
  reason: string,
): Promise<void> {
  const s = ident(schema);
  const { rows } = await client.query<{ ok: boolean }>("SELECT to_regclass($1) IS NOT NULL AS ok", [
    `${s}.${TABLES.runHistory}`,
  ]);
  if (!rows[0].ok) return;
  await client.query(
    `INSERT INTO ${s}.${TABLES.runHistory} (plat_client_name, job_name, event, actor, detail) VALUES ($1, $2, 'Refused', $3, $4::jsonb)`,
    [
      clientName,
      jobName,
      LOCAL_ACTOR,
      JSON.stringify({ reason, refusedBy: "export-task", note: "refused before it reached the run tables" }),
    ],
  );
}
