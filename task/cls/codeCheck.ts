/**
 * The unknown-code check of a run (cls/README.md): each batch's CLS codes against the current load sheet, set-based.
 * Report mode reports them; strict mode holds back the messages of every affected employee (HELD_BACK), released by the
 * first run whose sheet knows their codes.
 */
import { UserError } from "../../core/errors";
import { parseLoadSheetCsv } from "../../cls/csv";
import { knownCodesByField, knownCte, messageCodesCtes, UNKNOWN_BY_CODE, UNKNOWN_CTE } from "./checkSql";
import { UnknownCodes, reportLines, type UnknownCodeRow, type UnknownCodesReport } from "../../cls/report";
import { readLocation } from "../load/location";
import type { RunContext } from "../context";
import type { StoredMessage } from "../warehouse/archive";
import type { RunTables } from "../warehouse/tables";
import { MESSAGE_STATUS } from "../warehouse/messageStatus";

export const CLS_MODES = ["report", "strict"] as const;
export type ClsMode = (typeof CLS_MODES)[number];

export interface ClsInputs {
  /** The current load sheet: a path or s3:// URL of the CSV sheet. */
  sheet: string;
  mode: ClsMode;
}

export interface CurrentSheet {
  location: string;
  rows: number;
  fields: string[];
  codes: string[];
}

/** Reads the current load sheet; a missing or invalid sheet refuses the run before any data is touched. */
export async function loadCurrentSheet(location: string): Promise<CurrentSheet> {
  const text = await readLocation(location);
  if (text === undefined)
    throw new UserError(
      `CLS load sheet not found at ${location} (--cls): run pulumi up to upload it, or leave --cls out to skip the unknown-code check`,
    );
  const sheet = parseLoadSheetCsv(location, text);
  return {
    location,
    rows: sheet.rows.length,
    fields: sheet.rows.map((r) => `${r.CLS_ENTITY_NAME}.${r.CLS_CODE_FIELD_NAME}`),
    codes: sheet.rows.map((r) => r.CLS_CODE),
  };
}

/** What the check did in this run: the run history's `detail.unknownCodes`. */
export interface CodeCheckSummary {
  sheet: string;
  sheetRows: number;
  mode: ClsMode;
  checkedMessages: number;
  /** Of those, checked by the extract statement from the columns (the others, read back from _ARCHIVE, from their bodies). */
  checkedAtSource: number;
  /** Messages held back by this run (strict). */
  heldBack: number;
  /** Held-back messages of earlier runs released because the sheet now has their codes. */
  released: number;
  fields: UnknownCodesReport;
}

const MAX_REASON = 1000;

export class CodeCheck {
  private readonly unknown = new UnknownCodes();
  private readonly counts = { checkedMessages: 0, checkedAtSource: 0, heldBack: 0, released: 0 };
  /** Whether any message is held back: until one is, a batch without unknown codes needs no second look. */
  private anyHeld = false;
  private readonly sql: { screen: string; affected: string; hold: string; release: string };
  /** The sheet's codes per CLS code field: the extract statement checks its columns against them (task/mapping/extractSql.ts). */
  readonly knownCodes: string[][];

  constructor(
    private readonly ctx: RunContext,
    private readonly sheet: CurrentSheet,
    readonly mode: ClsMode,
  ) {
    this.sql = checkStatements(ctx.config.tables);
    this.knownCodes = knownCodesByField(sheet.fields, sheet.codes);
  }

  /** Strict: held-back messages whose codes (and whose employees' other held messages) are all known now go back to publishing. */
  async releaseHeld(): Promise<void> {
    if (this.mode !== "strict") return;
    const { rows } = await this.ctx.config.pool.query<{ held: number; released: number }>(this.sql.release, [
      this.sheet.fields,
      this.sheet.codes,
    ]);
    const { held, released } = rows[0];
    this.counts.released += released;
    this.anyHeld = held > released;
    if (held)
      this.ctx.log.info(
        { event: "cls.release", held, released, stillHeld: held - released },
        "held-back messages checked against the current CLS load sheet",
      );
  }

  /**
   * The messages that may be published now; in strict mode the others are marked HELD_BACK. Messages the extract
   * checked at the source carry their unknown codes; the others (read back from _ARCHIVE) are checked from their bodies.
   */
  async screen(messages: StoredMessage[]): Promise<StoredMessage[]> {
    if (messages.length === 0) return messages;
    const pool = this.ctx.config.pool;
    const fromBodies: string[] = [];
    for (const m of messages) if (m.unknownCodes === undefined) fromBodies.push(m.messageId);
    const found = unknownAtSource(messages);
    if (fromBodies.length) {
      const { rows } = await pool.query<UnknownFound>(this.sql.screen, [
        fromBodies,
        this.sheet.fields,
        this.sheet.codes,
      ]);
      found.by_code.push(...rows[0].by_code);
      found.by_message.push(...rows[0].by_message);
    }
    this.counts.checkedMessages += messages.length;
    this.counts.checkedAtSource += messages.length - fromBodies.length;
    const { by_code: byCode, by_message: byMessage } = found;
    if (byCode.length) {
      this.unknown.add(byCode);
      this.ctx.log.warn(
        {
          event: "cls.unknown",
          messages: byMessage.length,
          codes: byCode.slice(0, 20).map((r) => `${r.field}=${r.code}`),
        },
        `${byMessage.length} message(s) carry codes the CLS load sheet does not have`,
      );
    }
    if (this.mode !== "strict" || (byMessage.length === 0 && !this.anyHeld)) return messages;

    const reasons = new Map(
      byMessage.map((m) => [
        m.message_id,
        `unknown codes ${m.codes} (strict CLS check); retried once the CLS load sheet has them`,
      ]),
    );
    const unknownEmployees = [...new Set(byMessage.flatMap((m) => m.employees))];
    const affected = await pool.query<{ message_id: string; employees: string }>(this.sql.affected, [
      messages.map((m) => m.messageId),
      unknownEmployees,
    ]);
    for (const a of affected.rows) {
      if (!reasons.has(a.message_id))
        reasons.set(
          a.message_id,
          `employee ${a.employees} has a message held back for unknown codes (strict CLS check); released with it`,
        );
    }
    if (reasons.size === 0) return messages;
    const heldIds = [...reasons.keys()];
    await pool.query(this.sql.hold, [
      heldIds,
      heldIds.map((id) => reasons.get(id)!.slice(0, MAX_REASON)),
      this.ctx.run.transactionId,
    ]);
    this.counts.heldBack += heldIds.length;
    this.anyHeld = true;
    return messages.filter((m) => !reasons.has(m.messageId));
  }

  summary(): CodeCheckSummary {
    return {
      sheet: this.sheet.location,
      sheetRows: this.sheet.rows,
      mode: this.mode,
      ...this.counts,
      fields: this.unknown.report(),
    };
  }

  /** One warning per field with unknown codes, or one info line when there were none. */
  logSummary(): void {
    const s = this.summary();
    const { fields, ...counts } = s;
    if (this.unknown.empty) {
      this.ctx.log.info({ event: "cls.done", ...counts }, "no unknown codes: every code sent is in the CLS load sheet");
      return;
    }
    for (const line of reportLines(fields))
      this.ctx.log.warn({ event: "cls.unknownField", field: line.split(":")[0], ...fields[line.split(":")[0]] }, line);
    this.ctx.log.warn(
      { event: "cls.done", ...counts, unknownCodes: fields },
      this.mode === "strict"
        ? `unknown codes: ${s.heldBack} message(s) held back until the CLS load sheet has them`
        : "unknown codes were sent (report mode): update the CLS load sheet and have the hub team load it",
    );
  }
}

interface UnknownFound {
  by_code: UnknownCodeRow[];
  /** Per message with unknown codes: its `field=code` list (as the reason shows it) and the employees having them. */
  by_message: { message_id: string; codes: string; employees: string[] }[];
}

/** Byte order, as PostgreSQL's C collation (the statement's own ORDER BY) sorts the same lists. */
const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** The unknown codes the extract found at the source, in the shape the body statement returns. */
function unknownAtSource(messages: StoredMessage[]): UnknownFound {
  const codes = new Map<string, { occurrences: number; employees: Set<string> }>();
  const byMessage: UnknownFound["by_message"] = [];
  for (const m of messages) {
    if (!m.unknownCodes?.length) continue;
    const keys = new Set<string>();
    for (const [employee, unknown] of m.unknownCodes) {
      for (const key of unknown) {
        keys.add(key);
        const c = codes.get(key) ?? { occurrences: 0, employees: new Set<string>() };
        c.occurrences++;
        c.employees.add(employee);
        codes.set(key, c);
      }
    }
    byMessage.push({
      message_id: m.messageId,
      codes: [...keys].sort(byteOrder).join(", "),
      employees: m.unknownCodes.map(([e]) => e),
    });
  }
  const byCode = [...codes].map(([key, c]) => {
    const at = key.indexOf("=");
    return {
      field: key.slice(0, at),
      code: key.slice(at + 1),
      occurrences: c.occurrences,
      employees: c.employees.size,
    };
  });
  return { by_code: byCode, by_message: byMessage };
}

/** The statements of a run's tables. screen: $1 message ids, $2 and $3 the sheet's fields and codes. */
export function checkStatements(t: RunTables) {
  // Bodies and employee ids are in _ARCHIVE (written by the extract), every message of every run keyed by message_id.
  const unknownCtes = (fields: string, codes: string) => `${messageCodesCtes()},
  ${knownCte(fields, codes)},
  ${UNKNOWN_CTE}`;
  const screen = `WITH batch AS MATERIALIZED (SELECT message_id, body FROM ${t.archive} WHERE message_id = ANY($1::uuid[])),
  ${unknownCtes("$2", "$3")}
  SELECT (SELECT coalesce(json_agg(r), '[]'::json) FROM (${UNKNOWN_BY_CODE}) r) AS by_code,
         (SELECT coalesce(json_agg(r), '[]'::json) FROM (
            SELECT message_id, string_agg(DISTINCT field || '=' || code, ', ' ORDER BY field || '=' || code) AS codes, array_agg(DISTINCT employee_id) AS employees FROM unknown GROUP BY message_id
         ) r) AS by_message`;
  // The employees affected: those with unknown codes in this batch ($2, found by screen), and those with a message
  // held back elsewhere.
  const affected = `WITH affected AS (
    SELECT unnest($2::text[]) AS employee_id
    UNION
    SELECT e FROM ${t.status} s JOIN ${t.archive} h ON h.message_id = s.message_id CROSS JOIN LATERAL unnest(h.employee_ids) AS e
     WHERE s.status = '${MESSAGE_STATUS.heldBack}' AND NOT (h.message_id = ANY($1::uuid[]))
  )
  SELECT m.message_id, (SELECT string_agg(x, ', ' ORDER BY x) FROM unnest(m.employee_ids) AS x WHERE x IN (SELECT employee_id FROM affected)) AS employees
    FROM ${t.archive} m
   WHERE m.message_id = ANY($1::uuid[]) AND m.employee_ids && (SELECT coalesce(array_agg(employee_id), '{}') FROM affected)`;
  // Held back by the run $3: its _STATUS row names that run, as the rows of the messages it publishes do.
  const hold = `INSERT INTO ${t.status} AS s (message_id, transaction_id, hub_tenant_id, hub_destination, status, attempts, reason, updated_at)
    SELECT m.message_id, $3::uuid, m.hub_tenant_id, m.hub_destination, '${MESSAGE_STATUS.heldBack}', 0, r.reason, now()
      FROM unnest($1::uuid[], $2::text[]) AS r(id, reason) JOIN ${t.archive} m ON m.message_id = r.id
    ON CONFLICT (message_id) DO UPDATE SET transaction_id = EXCLUDED.transaction_id, status = '${MESSAGE_STATUS.heldBack}', reason = EXCLUDED.reason, updated_at = now()`;
  const release = `WITH held AS MATERIALIZED (
    SELECT m.message_id, m.employee_ids, m.body FROM ${t.status} s JOIN ${t.archive} m ON m.message_id = s.message_id WHERE s.status = '${MESSAGE_STATUS.heldBack}'
  ),
  batch AS (SELECT message_id, body FROM held),
  ${unknownCtes("$1", "$2")},
  still AS (SELECT DISTINCT message_id FROM unknown),
  still_employees AS (SELECT coalesce(array_agg(DISTINCT e), '{}') AS ids FROM held h CROSS JOIN LATERAL unnest(h.employee_ids) AS e WHERE h.message_id IN (SELECT message_id FROM still)),
  released AS (
    UPDATE ${t.status} s SET status = '${MESSAGE_STATUS.pending}', reason = 'released: the CLS load sheet has its codes now', updated_at = now()
      FROM held h
     WHERE s.message_id = h.message_id AND h.message_id NOT IN (SELECT message_id FROM still) AND NOT (h.employee_ids && (SELECT ids FROM still_employees))
    RETURNING s.message_id
  )
  SELECT (SELECT count(*)::int FROM held) AS held, (SELECT count(*)::int FROM released) AS released`;
  return { screen, affected, hold, release };
}
