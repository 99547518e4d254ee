/**
 * `hub-export cls check`: the run's comparison on demand, against a database. The codes of every employee in the
 * client's scope (the platform regions of its HUB_PLAT_CONFIG rows), mapped as the export maps them, against a load
 * sheet; and the messages held back by the strict check, with how many the sheet would release.
 */
import type { ClientBase } from "pg";
import { clientTables, TABLES } from "../../core/naming";
import { knownCte, messageCodesCtes, publishCodesCtes, UNKNOWN_BY_CODE, UNKNOWN_CTE } from "./checkSql";
import { UnknownCodes, type UnknownCodeRow, type UnknownCodesReport } from "../../cls/report";
import type { LoadSheet } from "../../cls/loadSheet";

export interface DatabaseCheckInput {
  stagingSchema: string;
  publishSchema: string;
  clientName: string;
  empTypeDefault: string;
  empGenderDefault: string;
}

export interface DatabaseCheckResult {
  clientName: string;
  platRegions: string[];
  employees: number;
  sheetRows: number;
  fields: UnknownCodesReport;
  heldBack: { messages: number; stillUnknown: number };
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

export async function checkDatabase(
  client: ClientBase,
  input: DatabaseCheckInput,
  sheet: LoadSheet,
): Promise<DatabaseCheckResult> {
  for (const name of [input.stagingSchema, input.publishSchema])
    if (!IDENT.test(name)) throw new Error(`unsafe schema name '${name}'`);
  const staging = input.stagingSchema;
  const fields = sheet.rows.map((r) => `${r.CLS_ENTITY_NAME}.${r.CLS_CODE_FIELD_NAME}`);
  const codes = sheet.rows.map((r) => r.CLS_CODE);
  const { rows: regions } = await client.query<{ plat_region: string }>(
    `SELECT DISTINCT plat_region FROM ${staging}.${TABLES.platConfig} WHERE plat_client_name = $1 ORDER BY 1`,
    [input.clientName],
  );
  const platRegions = regions.map((r) => r.plat_region);
  const { rows } = await client.query<{ by_code: UnknownCodeRow[]; employees: number }>(
    `WITH ${publishCodesCtes(input.publishSchema)},
     ${knownCte("$2", "$3")},
     ${UNKNOWN_CTE}
     SELECT (SELECT coalesce(json_agg(r), '[]'::json) FROM (${UNKNOWN_BY_CODE}) r) AS by_code,
            (SELECT count(*)::int FROM ${input.publishSchema}.employee WHERE plat_region = ANY($1::text[])) AS employees`,
    [platRegions, fields, codes, input.empTypeDefault, input.empGenderDefault],
  );
  const unknown = new UnknownCodes();
  unknown.add(rows[0].by_code);

  const t = clientTables(input.clientName);
  const held = await client.query<{ messages: number; still_unknown: number }>(
    `WITH batch AS MATERIALIZED (
       -- Every message's body is in _ARCHIVE, written by the extract (task/warehouse/archive.ts).
       SELECT m.message_id, m.body FROM ${staging}.${t.status} s JOIN ${staging}.${t.archive} m ON m.message_id = s.message_id WHERE s.status = 'HELD_BACK'
     ),
     ${messageCodesCtes()},
     ${knownCte("$1", "$2")},
     ${UNKNOWN_CTE}
     SELECT (SELECT count(*)::int FROM batch) AS messages, (SELECT count(DISTINCT message_id)::int FROM unknown) AS still_unknown`,
    [fields, codes],
  );
  return {
    clientName: input.clientName,
    platRegions,
    employees: rows[0].employees,
    sheetRows: sheet.rows.length,
    fields: unknown.report(),
    heldBack: { messages: held.rows[0].messages, stillUnknown: held.rows[0].still_unknown },
  };
}
