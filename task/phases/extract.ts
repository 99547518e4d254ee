/**
 * Step 3 of a run: the changed employees mapped to messages in HUB_<CLIENT>_MESSAGES, parts side by side, each chunk
 * one transaction that also moves its part's cursor (a killed run resumes at the next chunk). Employees of a part's
 * last, partial messages are carried to the run's last messages; a chunk the mapping SQL fails on is halved down to
 * the employee.
 */
import type { PoolClient } from "pg";
import type { RunContext } from "../context";
import { inTransaction } from "../warehouse/database";
import {
  chunkEndSql,
  chunkPairsSql,
  extractChunkSql,
  extractChunkValues,
  type ExtractedMessage,
} from "../mapping/extractSql";
import { PUBLISH_TABLES } from "../model/schema";
import { Progress } from "../log";
import { storedMessage, type StoredMessage } from "../warehouse/archive";
import { anySupersedable, supersede, supersedeSql } from "./supersede";
import { employeeIdUnique, heldEmployees } from "./badRows";
import { countsSoFar } from "./finish";
import { lookUpChanges, partEmployees, watermarkPairs, type ChangeLookup } from "./changes";

/** seq of part p's messages starts at p * PART_SEQ_SPAN. */
export const PART_SEQ_SPAN = 1_000_000_000_000;
/** The row of HUB_EXPORT_RUN_PART whose seqs and counts the run's last messages (the carried employees) take. */
const LAST_MESSAGES_PART = 100;
/** SQLSTATE classes of an error a row's data causes: data exception, integrity constraint violation, program limit exceeded. */
const DATA_ERROR_CLASSES = ["22", "23", "54"];
const MAX_REASON = 500;
/** Checked at the source, no unknown code: one shared empty list (only read). */
const NO_UNKNOWN_CODES: [string, string[]][] = [];

interface Part {
  part: number;
  firstAfter: string;
  lastId: string | null;
  cursor: string;
  nextSeq: string;
  done: boolean;
  carry: string[];
  /** Incremental mode: the part's employees still to map, sorted by PostgreSQL. */
  pending?: string[];
}

export interface ExtractTotals {
  employees: number;
  messages: number;
  /** How the changed employees were found, and what that cost (the run history's `detail.changes`). */
  changes?: Omit<ChangeLookup, "employees"> & { chunks: number };
}

/** What every chunk of the run shares. */
interface Chunks {
  sql: string;
  /** Employees held back by earlier runs, looked at again. */
  held: string[];
  /** Incremental mode: each chunk maps the employees it is given, nothing else of its id range. */
  only: boolean;
  /** The unknown-code check at the source: the sheet's codes per CLS code field (CODE_FIELDS). */
  knownCodes?: string[][];
  /** Chunk statements run (split halves included): what the mode saves. */
  statements: number;
}

/**
 * Extracts every part to its end, handing each committed chunk's messages to `publish`, and the older messages they
 * supersede (supersede.ts) to `superseded`.
 */
export async function extract(
  ctx: RunContext,
  publish: (messages: StoredMessage[]) => Promise<void>,
  superseded: (messageIds: string[]) => void,
  knownCodes: string[][] | undefined,
): Promise<ExtractTotals> {
  const { pool, tables } = ctx.config;
  const progress = new Progress(ctx.log, "extract");
  const soFar = await countsSoFar(pool, tables, { transactionId: ctx.run.transactionId });
  const totals: ExtractTotals = { employees: soFar.extracted, messages: soFar.messages };
  const perMessage = ctx.config.definition.parameters.records_per_hub_message;
  const [unique, held, supersedable] = await Promise.all([
    employeeIdUnique(ctx),
    heldEmployees(ctx),
    anySupersedable(ctx),
  ]);
  const changes = await lookUpChanges(ctx, held);
  // Incremental mode splits the parts among the employees to map: never a count of the whole table.
  const parts = await planParts(ctx, changes.employees);
  const only = changes.mode === "incremental";
  const chunks: Chunks = {
    sql: extractChunkSql(tables, perMessage, {
      checkDuplicates: !unique,
      only,
      codeCheck: knownCodes !== undefined,
    }),
    held,
    only,
    knownCodes,
    statements: 0,
  };
  if (changes.employees) await planIncremental(ctx, parts, changes.employees);
  const supersedeStatement = supersedable ? supersedeSql(tables) : undefined;

  const hand = async (client: PoolClient, rows: ExtractedMessage[]) => {
    totals.messages += rows.length;
    totals.employees += rows.reduce((n, r) => n + r.record_count, 0);
    progress.tick(totals.employees, { messages: totals.messages });
    if (rows.length === 0) return;
    if (supersedeStatement) {
      const ids = await supersede(
        ctx,
        client,
        supersedeStatement,
        rows.map((r) => r.message_id),
      );
      if (ids.length) superseded(ids);
    }
    await publish(
      rows.map((r) => {
        // A property set, not a second spread: those objects cost the publisher and the GC 8 % more task CPU.
        const message = storedMessage(r, ctx.run.transactionId);
        if (chunks.knownCodes) message.unknownCodes = r.unknown_codes ?? NO_UNKNOWN_CODES;
        return message;
      }),
    );
  };
  const session = async (work: (client: PoolClient) => Promise<void>) => {
    const client = await pool.connect();
    try {
      await client.query("SET work_mem = '64MB'; SET random_page_cost = 1.1");
      await work(client);
    } finally {
      client.release();
    }
  };
  // A stopping run takes no next chunk (what is committed is resumed by the next run); nor do the other parts once
  // one fails, and the failure is thrown only when none works any more: nothing of the run goes on after its end.
  let failure: { error: unknown } | undefined;
  await Promise.all(
    parts
      .filter((p) => !p.done)
      .map((part) =>
        session(async (client) => {
          while (!part.done && !failure) {
            ctx.stop.throwIfStopping();
            await hand(client, await nextChunk(ctx, client, chunks, part));
          }
        }).catch((error: unknown) => {
          failure ??= { error };
        }),
      ),
  );
  if (failure) throw failure.error;
  ctx.stop.throwIfStopping();
  if (parts.some((p) => p.carry.length > 0))
    await session(async (client) => hand(client, await lastMessages(ctx, client, chunks, parts)));
  progress.tick(totals.employees, { messages: totals.messages }, true);
  const { employees: _ids, ...lookup } = changes;
  return { ...totals, changes: { ...lookup, chunks: chunks.statements } };
}

/**
 * Incremental mode: each part takes its share of the changed employees, and the watermarks of the run's tenants
 * advance as a full run's would (every change after them is mapped), kept with the parts' pairs.
 */
async function planIncremental(ctx: RunContext, parts: Part[], employees: string[]): Promise<void> {
  const { pool, tables } = ctx.config;
  for (const part of parts)
    if (!part.done) part.pending = await partEmployees(pool, employees, part.cursor, part.lastId);
  const pairs = await watermarkPairs(ctx);
  if (pairs.length === 0) return;
  await pool.query(
    `UPDATE ${tables.runPart}
        SET pairs = (SELECT coalesce(jsonb_agg(DISTINCT x), '[]') FROM (SELECT jsonb_array_elements(pairs) AS x UNION SELECT jsonb_array_elements($3::jsonb)) u)
      WHERE transaction_id = $1 AND part = $2`,
    [ctx.run.transactionId, parts[0].part, JSON.stringify(pairs)],
  );
}

/** The part's next chunk: up to chunkSize employees after its cursor (incremental mode: its next pending ones). */
async function nextChunk(ctx: RunContext, client: PoolClient, chunks: Chunks, part: Part): Promise<ExtractedMessage[]> {
  const { chunkSize } = ctx.settings;
  const endSql = chunkEndSql(ctx.config.tables);
  const ids = part.pending?.slice(0, chunkSize);
  // Ids compare in PostgreSQL (its collation orders them, and sorted `pending`), never in JavaScript.
  const through = ids
    ? ids[ids.length - 1]
    : (await client.query<{ through: string | null }>(endSql, [part.cursor, chunkSize, part.lastId])).rows[0].through;
  if (through === null || through === undefined) {
    // The part has no employee left to map: recorded, so that a resumed run skips it.
    await client.query(`UPDATE ${ctx.config.tables.runPart} SET done = true WHERE transaction_id = $1 AND part = $2`, [
      ctx.run.transactionId,
      part.part,
    ]);
    part.done = true;
    return [];
  }
  const last = ids ? ids.length === part.pending!.length : through === part.lastId;
  const messages = await extractRange(ctx, client, chunks, part, { through, last, carryIn: part.carry, ids });
  if (ids) part.pending = part.pending!.slice(ids.length);
  return messages;
}

/**
 * A chunk's employees: those after the part's cursor up to `through` (incremental mode: those of `ids`). `last`: the
 * part is done with them. `carryIn` are the carried employees the chunk takes (records_per_hub_message > 1); the part
 * then carries the others and the chunk's own last ones.
 */
interface Range {
  through: string;
  last: boolean;
  carryIn: string[];
  ids?: string[];
}

/** The range's employees; on a data error, its halves (down to the employee that fails). */
async function extractRange(
  ctx: RunContext,
  client: PoolClient,
  chunks: Chunks,
  part: Part,
  range: Range,
): Promise<ExtractedMessage[]> {
  const { through, last, ids } = range;
  try {
    return await commitChunk(ctx, client, chunks, part, range);
  } catch (err) {
    if (!isDataError(err)) throw err;
    const employee = `${ctx.config.tables.publishSchema}.${PUBLISH_TABLES.employee}`;
    const rows =
      ids ??
      (
        await client.query<{ employee_id: string }>(
          `SELECT DISTINCT employee_id FROM ${employee} WHERE employee_id > $1 AND employee_id <= $2 ORDER BY 1`,
          [part.cursor, through],
        )
      ).rows.map((r) => r.employee_id);
    if (rows.length === 0) throw err;
    if (rows.length === 1) {
      await holdMappingError(ctx, client, rows[0], err as Error, { part, through, last });
      return [];
    }
    // Carried employees wait for a chunk that succeeds (or, if one of them fails, for the run's last messages).
    const half = Math.floor(rows.length / 2);
    const halves: Range[] = [
      { through: rows[half - 1], last: false, carryIn: [], ids: ids?.slice(0, half) },
      { through, last, carryIn: [], ids: ids?.slice(half) },
    ];
    const messages: ExtractedMessage[] = [];
    for (const h of halves) messages.push(...(await extractRange(ctx, client, chunks, part, h)));
    return messages;
  }
}

/** One chunk: pairs, messages and the part's cursor in one repeatable-read transaction (one snapshot for all three). */
async function commitChunk(
  ctx: RunContext,
  client: PoolClient,
  chunks: Chunks,
  part: Part,
  { through, last, carryIn, ids }: Range,
): Promise<ExtractedMessage[]> {
  const { tables, tenants } = ctx.config;
  const result = await inTransaction(
    client,
    async () => {
      const pairs = await client.query<{ hub_tenant_id: string; country_code: string }>(
        chunkPairsSql(tables, chunks.only),
        [
          tenants.map((x) => x.hubTenantId),
          tenants.map((x) => x.platRegion),
          part.cursor,
          through,
          ...(chunks.only ? [ids ?? []] : []),
        ],
      );
      const { messages, carried } = await runChunk(ctx, client, chunks, {
        after: part.cursor,
        through,
        seqOffset: part.nextSeq,
        carry: carryIn,
        final: false,
        only: ids,
      });
      const taken = new Set(carryIn);
      const carry = [...part.carry.filter((id) => !taken.has(id)), ...carried];
      const employees = messages.reduce((n, r) => n + r.record_count, 0);
      await client.query(
        `UPDATE ${tables.runPart}
            SET cursor_id = $3, next_seq = next_seq + $4, messages = messages + $4, employees = employees + $5, done = $6, carry = $8,
                pairs = (SELECT coalesce(jsonb_agg(DISTINCT x), '[]') FROM (SELECT jsonb_array_elements(pairs) AS x UNION SELECT jsonb_array_elements($7::jsonb)) u)
          WHERE transaction_id = $1 AND part = $2`,
        [
          ctx.run.transactionId,
          part.part,
          through,
          messages.length,
          employees,
          last,
          JSON.stringify(pairs.rows.map((r) => [r.hub_tenant_id, r.country_code])),
          carry,
        ],
      );
      return { messages, carry };
    },
    "BEGIN ISOLATION LEVEL REPEATABLE READ",
  );
  // Only once committed: after a rollback the part stays where the database has it.
  part.cursor = through;
  part.nextSeq = String(Number(part.nextSeq) + result.messages.length);
  part.done = last;
  part.carry = result.carry;
  return result.messages;
}

/** The chunk statement; with records_per_hub_message > 1 its extra row names the employees it carries. */
async function runChunk(
  ctx: RunContext,
  client: PoolClient,
  chunks: Chunks,
  c: { after: string; through: string; seqOffset: string; carry: string[]; final: boolean; only?: string[] },
): Promise<{ messages: ExtractedMessage[]; carried: string[] }> {
  const { definition, tenants } = ctx.config;
  const p = definition.parameters;
  chunks.statements++;
  const { rows } = await client.query<ExtractedMessage>(
    chunks.sql,
    extractChunkValues(
      {
        transactionId: ctx.run.transactionId,
        clientName: p.client_name,
        tenantIds: tenants.map((x) => x.hubTenantId),
        destinations: tenants.map((x) => x.hubDestination),
        platRegions: tenants.map((x) => x.platRegion),
        idlDate: p.idl_date,
        upperBound: ctx.run.upperBound,
        after: c.after,
        through: c.through,
        seqOffset: Number(c.seqOffset),
        systemCode: p.system_code,
        empTypeDefault: p.EmpTypeDefault,
        empGenderDefault: p.EmpGenderDefault,
        createdAt: new Date().toISOString(),
        held: chunks.held,
        carry: c.carry,
        final: c.final,
        ...(chunks.only ? { only: c.only ?? [] } : {}),
        knownCodes: chunks.knownCodes,
      },
      p.records_per_hub_message,
    ),
  );
  const messages = rows.filter((r) => r.message_id !== null);
  return { messages, carried: rows.find((r) => r.message_id === null)?.carry ?? [] };
}

/**
 * Once every part is done: the employees the parts carry (records_per_hub_message > 1) make the run's last messages,
 * at most one partial per tenant and country. A data error splits them in halves, as a chunk's range.
 */
async function lastMessages(
  ctx: RunContext,
  client: PoolClient,
  chunks: Chunks,
  parts: Part[],
): Promise<ExtractedMessage[]> {
  const { tables } = ctx.config;
  const tx = ctx.run.transactionId;
  await client.query(
    `INSERT INTO ${tables.runPart} (transaction_id, part, first_after, last_id, cursor_id, next_seq, done) VALUES ($1, $2, '', '', '', $3, true) ON CONFLICT DO NOTHING`,
    [tx, LAST_MESSAGES_PART, LAST_MESSAGES_PART * PART_SEQ_SPAN],
  );
  const write = async (carry: string[]): Promise<ExtractedMessage[]> => {
    try {
      return await inTransaction(
        client,
        async () => {
          const { rows } = await client.query<{ next_seq: string }>(
            `SELECT next_seq FROM ${tables.runPart} WHERE transaction_id = $1 AND part = $2`,
            [tx, LAST_MESSAGES_PART],
          );
          // An empty id range: only the carried employees.
          const { messages } = await runChunk(ctx, client, chunks, {
            after: "",
            through: "",
            seqOffset: rows[0].next_seq,
            carry,
            final: true,
          });
          await writtenOff(ctx, client, carry);
          await client.query(
            `UPDATE ${tables.runPart} SET next_seq = next_seq + $3, messages = messages + $3, employees = employees + $4 WHERE transaction_id = $1 AND part = $2`,
            [tx, LAST_MESSAGES_PART, messages.length, messages.reduce((n, r) => n + r.record_count, 0)],
          );
          return messages;
        },
        "BEGIN ISOLATION LEVEL REPEATABLE READ",
      );
    } catch (err) {
      if (!isDataError(err)) throw err;
      if (carry.length === 1) {
        await inTransaction(client, async () => {
          await holdMappingError(ctx, client, carry[0], err as Error);
          await writtenOff(ctx, client, carry);
        });
        return [];
      }
      const half = Math.ceil(carry.length / 2);
      return [...(await write(carry.slice(0, half))), ...(await write(carry.slice(half)))];
    }
  };
  const messages = await write([...new Set(parts.flatMap((p) => p.carry))]);
  for (const p of parts) p.carry = [];
  return messages;
}

/** The carried employees `ids` are written (or held back): no part carries them any more. */
async function writtenOff(ctx: RunContext, client: PoolClient, ids: string[]): Promise<void> {
  await client.query(
    `UPDATE ${ctx.config.tables.runPart} SET carry = ARRAY(SELECT x FROM unnest(carry) AS x WHERE x <> ALL ($2::text[])) WHERE transaction_id = $1 AND carry && $2::text[]`,
    [ctx.run.transactionId, ids],
  );
}

/**
 * The mapping SQL fails on this employee alone: it is held back with the database's message, and (with `at`) the
 * part's cursor moves past it, in one transaction. The next runs look at it again until it maps.
 */
async function holdMappingError(
  ctx: RunContext,
  client: PoolClient,
  employeeId: string,
  err: Error,
  at?: { part: Part; through: string; last: boolean },
): Promise<void> {
  const { tables } = ctx.config;
  const code = (err as { code?: string }).code;
  const message = String(err.message).split("\n")[0];
  const sqlstate = code ? ` (SQLSTATE ${code})` : "";
  const reason = `the mapping SQL fails on this employee${sqlstate}: ${message}`.slice(0, MAX_REASON);
  ctx.log.warn(
    { event: "extract.mappingError", employeeId, code, reason },
    "a row breaks the mapping SQL: its employee is held back, the others go on",
  );
  const hold = async () => {
    await client.query(
      `INSERT INTO ${tables.rowsHeldBack} AS h (employee_id, kind, reason, copies, first_held_by, held_by) VALUES ($1, 'MAPPING_ERROR', $2, 1, $3, $3)
       ON CONFLICT (employee_id) DO UPDATE SET kind = EXCLUDED.kind, reason = EXCLUDED.reason, held_by = EXCLUDED.held_by, held_at = now()`,
      [employeeId, reason, ctx.run.transactionId],
    );
    if (at)
      await client.query(
        `UPDATE ${tables.runPart} SET cursor_id = $3, done = $4 WHERE transaction_id = $1 AND part = $2`,
        [ctx.run.transactionId, at.part.part, at.through, at.last],
      );
  };
  if (!at) return hold();
  await inTransaction(client, hold);
  at.part.cursor = at.through;
  at.part.done = at.last;
}

function isDataError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === "string" && DATA_ERROR_CLASSES.includes(code.slice(0, 2));
}

/**
 * The parts of this transaction, split at employee-id quantiles when the extract starts: of the employee table in full
 * mode, of `employees` (the ones to map) in incremental mode. Either way the parts cover every id, so a run resumed in
 * the other mode maps what it must; fewer than a chunk per part's worth of employees make one part.
 */
async function planParts(ctx: RunContext, employees: string[] | undefined): Promise<Part[]> {
  const { pool, tables } = ctx.config;
  const tx = ctx.run.transactionId;
  const load = async () =>
    (
      await pool.query<Part>(
        `SELECT part, first_after AS "firstAfter", last_id AS "lastId", cursor_id AS cursor, next_seq AS "nextSeq", done, carry
           FROM ${tables.runPart} WHERE transaction_id = $1 ORDER BY part`,
        [tx],
      )
    ).rows;
  const existing = await load();
  if (existing.length > 0) return existing;

  const workers = ctx.settings.extractWorkers;
  const minimum = workers * ctx.settings.chunkSize;
  const fractions = Array.from({ length: workers - 1 }, (_, k) => (k + 1) / workers);
  let splits: string[] = [];
  if (employees) {
    // Ids sort in PostgreSQL (its collation), as everywhere else.
    const { rows } = await pool.query<{ splits: string[] | null }>(
      `SELECT CASE WHEN count(*) >= $3 THEN percentile_disc($2::float8[]) WITHIN GROUP (ORDER BY id) END AS splits
         FROM (SELECT DISTINCT id FROM unnest($1::text[]) AS u(id)) d`,
      [employees, fractions, minimum],
    );
    splits = rows[0].splits ?? [];
  } else {
    const employee = `${tables.publishSchema}.${PUBLISH_TABLES.employee}`;
    const { rows: count } = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${employee}`);
    const n = Number(count[0].n);
    for (let k = 1; k < workers && n >= minimum; k++) {
      const { rows } = await pool.query<{ employee_id: string }>(
        `SELECT employee_id FROM ${employee} ORDER BY employee_id OFFSET $1 LIMIT 1`,
        [Math.floor((k * n) / workers)],
      );
      if (rows[0]) splits.push(rows[0].employee_id);
    }
  }
  splits = splits.filter((id, i) => id !== splits[i - 1]);
  const bounds = ["", ...splits];
  await pool.query(
    `INSERT INTO ${tables.runPart} (transaction_id, part, first_after, last_id, cursor_id, next_seq)
     SELECT $1, p - 1, a, l, a, (p - 1) * $4::bigint FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS u(a, l, p)
     ON CONFLICT DO NOTHING`,
    [tx, bounds, bounds.map((_, i) => splits[i] ?? null), PART_SEQ_SPAN],
  );
  return load();
}
