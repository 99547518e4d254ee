/**
 * The extract statement: one chunk of employees to hub messages in one INSERT ... SELECT (bodies to _ARCHIVE, ids to
 * _MESSAGES). An employee is extracted when it or a sub-entity changed after its tenant/country watermark (idl_date
 * when none) and no later than the run's upper bound, so that the watermark can advance to the bound.
 */
import { SUB_ENTITIES, selectFields, userFields } from "./userEntity";
import { PUBLISH_TABLES } from "../model/schema";
import { DATA_DOMAIN_CODE, ENTITY_NAME } from "../../core/hubContract";
import { CODE_FIELDS, sourceCodeChecks } from "../cls/checkSql";
import type { QueueRow } from "../warehouse/archive";

export interface ExtractTables {
  publishSchema: string;
  /** The run's work queue (ids) and the archive (bodies): each message goes to both. */
  messages: string;
  archive: string;
  watermark: string;
  /** HUB_<CLIENT>_ROWS_HELD_BACK: without it (the benchmark's floor, mapping tests) bad rows are left out, not recorded. */
  rowsHeldBack?: string;
}

/** Parameters, in order. */
export interface ExtractChunkParams {
  transactionId: string;
  clientName: string;
  tenantIds: string[];
  destinations: string[];
  platRegions: string[];
  idlDate: string;
  upperBound: string;
  /** The chunk: employees with an id after `after` ("" for the first chunk), up to and including `through`. */
  after: string;
  through: string;
  /** seq of the last message written so far. */
  seqOffset: number;
  systemCode: string;
  empTypeDefault: string;
  empGenderDefault: string;
  createdAt: string;
  /** Employees held back earlier (HUB_<CLIENT>_ROWS_HELD_BACK): looked at again whether or not they changed. */
  held?: string[];
  /**
   * records_per_hub_message > 1 only: employees of earlier chunks whose message was not full (carried over, so that
   * every message is full but the last of each tenant and country), and whether this chunk writes its last ones too.
   */
  carry?: string[];
  final?: boolean;
  /** Incremental mode: the chunk's employees (changed or held back); the statement maps no other (extractChunkSql `only`). */
  only?: string[];
  /** The unknown-code check at the source: the CLS load sheet's codes per field of CODE_FIELDS (extractChunkSql `codeCheck`). */
  knownCodes?: string[][];
}

/**
 * The statement's values, in order; `carry` and `final` only for records_per_hub_message > 1, then `only` and
 * `knownCodes` when the statement was made for them (extractParams gives their numbers).
 */
export function extractChunkValues(p: ExtractChunkParams, perMessage = 1): unknown[] {
  const values: unknown[] = [
    p.transactionId,
    p.clientName,
    p.tenantIds,
    p.destinations,
    p.platRegions,
    p.idlDate,
    p.upperBound,
    p.after,
    p.through,
    p.seqOffset,
    p.systemCode,
    p.empTypeDefault,
    p.empGenderDefault,
    p.createdAt,
    p.held ?? [],
  ];
  if (perMessage > 1) values.push(p.carry ?? [], p.final ?? false);
  if (p.only) values.push(p.only);
  if (p.knownCodes) values.push(...p.knownCodes);
  return values;
}

/**
 * The numbers of the optional parameters: `only`, then the known codes (one per field of CODE_FIELDS), follow the 15
 * (17 with carry) others.
 */
function extractParams(
  perMessage: number,
  options: ExtractOptions,
): { only?: string; known?: (field: string) => string } {
  const first = perMessage > 1 ? 18 : 16;
  const known = options.only ? first + 1 : first;
  return {
    only: options.only ? `$${first}` : undefined,
    known: options.codeCheck ? (field) => `$${known + CODE_FIELDS.indexOf(field)}` : undefined,
  };
}

export interface ExtractOptions {
  /** false: the benchmark's floor (nothing written, one row of totals). */
  insert?: boolean;
  /** The publish schema has no unique index on employee_id: duplicates are counted. */
  checkDuplicates?: boolean;
  /** Incremental mode: only the employees of a text[] parameter are mapped (their rows found by the id indexes). */
  only?: boolean;
  /**
   * The unknown-code check at the source: each message row gets `unknown_codes`, [employee id, [Entity.Field=code, ...]]
   * per employee with codes the sheet lacks (null when none), computed from the columns; the sheet's codes are a text[]
   * parameter per field of CODE_FIELDS.
   */
  codeCheck?: boolean;
}

/**
 * A message written by the chunk, as the publisher takes it. With records_per_hub_message > 1 the statement adds one
 * row with `carry` (the employees of the chunk's messages that are not full, not written) and nulls elsewhere.
 */
export interface ExtractedMessage extends QueueRow {
  carry?: string[] | null;
  /** The unknown-code check at the source: [employee id, its unknown `Entity.Field=code` keys] per employee, null when none. */
  unknown_codes?: [string, string[]][] | null;
}

/**
 * [tenant id, country code] pairs in the chunk's id range ($3, $4] for tenants ($1) of platform regions ($2). A row
 * without a country has no watermark (its employee is looked at by every run until it has one).
 */
export function chunkPairsSql(t: ExtractTables, only = false): string {
  return `SELECT DISTINCT t.hub_tenant_id, e.country_code
      FROM ${t.publishSchema}.${PUBLISH_TABLES.employee} e
      JOIN unnest($1::text[], $2::text[]) AS t(hub_tenant_id, plat_region) ON t.plat_region = e.plat_region
     WHERE e.employee_id > $3 AND e.employee_id <= $4 AND e.country_code IS NOT NULL${only ? " AND e.employee_id = ANY($5::text[])" : ""}`;
}

/**
 * A message's id, derived from its transaction and seq, so a resumed run finds the same id: the transaction's md5
 * with the seq in its last 12 hex digits. Ids of one transaction ascend with seq, so the primary key index grows at
 * its right edge instead of splitting pages all over.
 */
export function messageIdSql(transactionId: string, seq: string): string {
  return `overlay(md5(${transactionId}::text) placing lpad(to_hex(${seq}), 12, '0') from 21)::uuid`;
}

/**
 * The end of the next chunk: the id of the `$2`-th employee after `$1` (any region), or the last one, but not past
 * the part's last id `$3` (null: no limit); null when no employee is left. A statement of its own, so that the chunk
 * statement is planned for its real id range.
 */
export function chunkEndSql(t: ExtractTables): string {
  const employee = `${t.publishSchema}.${PUBLISH_TABLES.employee}`;
  return `SELECT least(coalesce(
      (SELECT employee_id FROM ${employee} WHERE employee_id > $1 ORDER BY employee_id OFFSET $2::int - 1 LIMIT 1),
      (SELECT max(employee_id) FROM ${employee} WHERE employee_id > $1)), $3::text) AS through`;
}

/**
 * The statement for records_per_hub_message `perMessage`. Messages group the employees of one tenant and country in
 * employee_id order; with one record per message no grouping is needed. With more, a chunk writes full messages only:
 * the employees of the last one of each tenant and country are carried to the next chunk ($16; $17 true writes them
 * all), so that every message is full but one per tenant and country per run.
 *
 * Bad rows (task/README.md, "Bad warehouse rows"): an employee_id of white space only, and (`checkDuplicates`: the
 * publish schema has no unique index on it) an employee_id in several rows of the tenants' scope, are left out and
 * recorded in HUB_<CLIENT>_ROWS_HELD_BACK; the employees held there ($15) are looked at again whether they changed or
 * not, and leave it once they map cleanly. Duplicates always fall into one chunk: chunks end at an employee_id.
 *
 * The planner knows nothing of a materialized CTE's columns: an equality on one (`copies = 1`) is estimated to keep
 * 0.5 % of the rows, and a chunk estimated at one row gets nested loops that run each sub-entity aggregate once per
 * employee (seen: 35 s for a chunk instead of 0.3 s). So the scope's filters are ones estimated to keep most rows.
 *
 * Each message and its body are built once (`out`, materialized: both inserts and the result read it), and the result
 * is read from there with its unknown codes: an INSERT's RETURNING cannot carry them, and joining it back to the
 * messages stored every body a second time.
 */
export function extractChunkSql(t: ExtractTables, perMessage: number, options: ExtractOptions = {}): string {
  const pub = (table: string) => `${t.publishSchema}.${table}`;
  const carry = perMessage > 1;
  const param = extractParams(perMessage, options);
  const only = (x: string) => (param.only ? ` AND ${x}.employee_id = ANY(${param.only}::text[])` : "");
  const range = (x: string) =>
    `((${x}.employee_id > $8 AND ${x}.employee_id <= $9${only(x)})${carry ? ` OR ${x}.employee_id = ANY($16::text[])` : ""})`;
  const inChunk = range("x");
  // Whether some employee of the chunk did not change itself: only then are sub-entity changes looked up.
  const needSubChanges = "(SELECT look FROM mode)";

  const subChanged = SUB_ENTITIES.map(
    (s) =>
      `SELECT x.employee_id FROM ${pub(s.table)} x WHERE ${needSubChanges} AND ${inChunk} AND x.changed_at > (SELECT since FROM mode)`,
  ).join("\n      UNION ");

  // The unknown-code check at the source: the code columns against the sheet's keys, before they become JSON.
  const codes = param.known ? sourceCodeChecks(param.known, "$12", "$13") : undefined;
  const subCodes = SUB_ENTITIES.map((s) => codes?.sub(s.table) ?? []);
  const aggregates = SUB_ENTITIES.map(
    (s, i) => `s${i} AS (
    SELECT x.employee_id, json_agg(r ORDER BY x.${s.key}) AS items, max(x.changed_at) AS changed_at${subCodes[i].map((a, j) => `, ${a} AS uc${j}`).join("")}
      FROM ${pub(s.table)} x CROSS JOIN LATERAL (SELECT ${selectFields(s.fields)}) r
     WHERE ${inChunk} AND x.employee_id IN (SELECT employee_id FROM cand)
     GROUP BY x.employee_id
  )`,
  ).join(",\n  ");

  const user = selectFields([
    ...userFields("$12", "$13"),
    ...SUB_ENTITIES.map((s, i) => [s.name, `coalesce(s${i}.items, '[]'::json)`] as const),
  ]);
  const joins = SUB_ENTITIES.map((_, i) => `LEFT JOIN s${i} ON s${i}.employee_id = e.employee_id`).join("\n      ");
  const rollup = `greatest(e.changed_at, ${SUB_ENTITIES.map((_, i) => `s${i}.changed_at`).join(", ")})`;
  // An employee's unknown keys (null when none: the common case concatenates no arrays).
  const codeLists = codes ? [codes.user, ...subCodes.flatMap((a, i) => a.map((_, j) => `s${i}.uc${j}`))] : [];
  const unknownCodes = codes
    ? `CASE WHEN ${codeLists.map((l) => `${l} IS NULL`).join(" AND ")} THEN NULL ELSE ${codeLists.reduce((all, next) => `array_cat(${all}, ${next})`)} END`
    : undefined;

  const header = (count: string) =>
    `json_build_object('transactionId', $1::text, 'tenantId', hub_tenant_id, 'systemCode', $11::text, 'dataDomainCode', '${DATA_DOMAIN_CODE}', 'entityName', '${ENTITY_NAME}', 'recordCount', ${count}, 'createdAt', $14::text)::text`;
  // The body's layout is fixed (see messageBody.ts): the ERS phase cuts the entities back out of it.
  const body = (count: string, entities: string) =>
    `'{"header":' || ${header(count)} || ',"entities":[' || ${entities} || ']}'`;

  const messages =
    perMessage === 1
      ? `msgs AS (
    SELECT hub_tenant_id, hub_destination, country_code, 1 AS n, ARRAY[employee_id] AS ids, changed_at AS changed_through, entity AS entities,${
      codes
        ? `
           CASE WHEN cardinality(uc) > 0 THEN json_build_array(json_build_array(employee_id, uc)) END AS unknown_codes,`
        : ""
    }
           $10::bigint + row_number() OVER (ORDER BY hub_tenant_id, country_code, employee_id) AS seq
      FROM users
  )`
      : `grouped AS (
    SELECT u.*, (row_number() OVER (PARTITION BY hub_tenant_id, country_code ORDER BY employee_id) - 1) / ${perMessage} AS grp FROM users u
  ),
  groups AS (
    SELECT hub_tenant_id, hub_destination, country_code, grp, count(*)::int AS n, array_agg(employee_id ORDER BY employee_id) AS ids,
           max(changed_at) AS changed_through, string_agg(entity, ',' ORDER BY employee_id) AS entities${
             codes
               ? `,
           json_agg(json_build_array(employee_id, uc) ORDER BY employee_id) FILTER (WHERE cardinality(uc) > 0) AS unknown_codes`
               : ""
           }
      FROM grouped GROUP BY hub_tenant_id, hub_destination, country_code, grp
  ),
  msgs AS (
    SELECT g.*, $10::bigint + row_number() OVER (ORDER BY hub_tenant_id, country_code, grp) AS seq FROM groups g WHERE g.n = ${perMessage} OR $17::boolean
  ),
  carried AS (
    SELECT coalesce(array_agg(id ORDER BY id), '{}') AS ids FROM groups g CROSS JOIN LATERAL unnest(g.ids) AS id WHERE g.n < ${perMessage} AND NOT $17::boolean
  )`;

  return `WITH tenant AS (
    SELECT * FROM unnest($3::text[], $4::text[], $5::text[]) AS t(hub_tenant_id, hub_destination, plat_region)
  ),
  chunk AS MATERIALIZED (
    SELECT e.*, ${options.checkDuplicates ? "count(*) OVER (PARTITION BY e.employee_id)" : "1"} AS copies,
           e.employee_id = ANY($15::text[])${carry ? " OR e.employee_id = ANY($16::text[])" : ""} AS forced
      FROM ${pub(PUBLISH_TABLES.employee)} e
     WHERE ${range("e")} AND e.plat_region = ANY($5::text[])
  ),
  bad AS MATERIALIZED (
    SELECT employee_id, count(*)::int AS copies, CASE WHEN btrim(employee_id) = '' THEN 'BLANK_ID' ELSE 'DUPLICATE_ID' END AS kind
      FROM chunk WHERE copies > 1 OR btrim(employee_id) = '' GROUP BY employee_id
  ),
  scope AS MATERIALIZED (
    SELECT c.*, t.hub_tenant_id, t.hub_destination, coalesce(w.changed_through, $6::timestamp) AS since
      FROM chunk c
      JOIN tenant t ON t.plat_region = c.plat_region
      LEFT JOIN ${t.watermark} w ON w.plat_client_name = $2 AND w.hub_tenant_id = t.hub_tenant_id AND w.country_code = c.country_code
     WHERE ${options.checkDuplicates ? "c.copies < 2 AND " : ""}btrim(c.employee_id) <> ''
  ),
  mode AS (SELECT NOT coalesce(bool_and(changed_at > since OR forced), true) AS look, min(since) AS since FROM scope),
  sub_changed AS (
      ${subChanged}
  ),
  cand AS MATERIALIZED (
    SELECT s.* FROM scope s LEFT JOIN sub_changed sc ON sc.employee_id = s.employee_id
     WHERE s.changed_at > s.since OR s.forced OR sc.employee_id IS NOT NULL
  ),
  ${aggregates},
  users AS (
    SELECT e.hub_tenant_id, e.hub_destination, e.country_code, e.employee_id, r.changed_at, row_to_json(u)::text AS entity${unknownCodes ? `, ${unknownCodes} AS uc` : ""}
      FROM cand e
      ${joins}
      CROSS JOIN LATERAL (SELECT ${rollup} AS changed_at) r
      CROSS JOIN LATERAL (SELECT ${user}) u
     WHERE (r.changed_at > e.since OR e.forced) AND r.changed_at <= $7::timestamp
  ),
  ${messages},
  out AS (
    SELECT seq, ${messageIdSql("$1", "seq")} AS message_id, hub_tenant_id, hub_destination, n AS record_count, ${body("n", "entities")} AS body,
           country_code, ids, changed_through${codes ? ", unknown_codes" : ""}
      FROM msgs
  ),
  ins AS (
    INSERT INTO ${t.archive} (message_id, transaction_id, seq, hub_tenant_id, hub_destination, country_code, record_count, employee_ids, changed_through, body, created_at, archived_by)
    SELECT message_id, $1::uuid, seq, hub_tenant_id, hub_destination, country_code, record_count, ids, changed_through, body, now(), $1::uuid
      FROM out
  ),
  queued AS (
    INSERT INTO ${t.messages} (message_id, transaction_id, seq, hub_tenant_id, hub_destination, record_count, created_at)
    SELECT message_id, $1::uuid, seq, hub_tenant_id, hub_destination, record_count, now() FROM out
  )${t.rowsHeldBack ? `,\n  ${heldBackCtes(t.rowsHeldBack, range("h"))}` : ""}
  SELECT seq, message_id, hub_tenant_id, hub_destination, record_count, body${codes ? ", unknown_codes" : ""}${carry ? ", NULL::text[] AS carry" : ""} FROM out${carry ? `\n  UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, NULL, ${codes ? "NULL, " : ""}ids FROM carried` : ""}
  ORDER BY seq`.replace(/ {2}ins AS \(\n {4}INSERT[\s\S]*$/, options.insert === false ? FLOOR_TAIL : "$&");
}

/**
 * The chunk's bad rows go to HUB_<CLIENT>_ROWS_HELD_BACK (or stay there, named by this run $1); the held employees
 * ($15) of the chunk's range (`inRange`, over alias h) that are bad no more leave it: they are in this chunk's messages
 * (or changed after the run's upper bound, and the next run has them), or gone from the tenants' scope.
 */
function heldBackCtes(table: string, inRange: string): string {
  return `held_bad AS (
    INSERT INTO ${table} AS h (employee_id, kind, reason, copies, first_held_by, held_by)
    SELECT employee_id, kind,
           CASE kind WHEN 'BLANK_ID' THEN 'employee_id is blank (white space only): not published until the row has an id'
                ELSE format('employee_id %s is in %s employee rows of the tenants'' scope: none is published until one is left', employee_id, copies) END,
           copies, $1::uuid, $1::uuid
      FROM bad
    ON CONFLICT (employee_id) DO UPDATE SET kind = EXCLUDED.kind, reason = EXCLUDED.reason, copies = EXCLUDED.copies, held_by = EXCLUDED.held_by, held_at = now()
  ),
  held_clean AS (
    DELETE FROM ${table} h WHERE h.employee_id = ANY($15::text[]) AND ${inRange} AND h.employee_id NOT IN (SELECT employee_id FROM bad)
  )`;
}

/** The benchmark's floor: the same mapping, bodies built, nothing written: one row of totals. */
const FLOOR_TAIL = `  totals AS (SELECT count(*)::int AS messages, coalesce(sum(length(body)), 0)::bigint AS chars FROM out)
  SELECT * FROM totals`;
