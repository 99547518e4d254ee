/**
 * Step 3 of a run: the changed employees of the tenants' scope, mapped to User entities and grouped into messages in
 * HUB_<CLIENT>_MESSAGES. The employee ids are split into parts mapped side by side, each chunk in one database
 * transaction that also moves its part's cursor: a killed run resumes at the next chunk of each part. Each chunk's
 * messages go to the publisher as soon as they are committed.
 */
import type { PoolClient } from "pg";
import type { RunContext } from "../context";
import { inTransaction } from "../warehouse/database";
import { chunkEndSql, chunkPairsSql, extractChunkSql, extractChunkValues, type ExtractTables, type ExtractedMessage } from "../mapping/extractSql";
import { PUBLISH_TABLES } from "../model/schema";
import { Progress } from "../log";
import type { StoredMessage } from "./publish";

/** seq of part p's messages starts at p * PART_SEQ_SPAN. */
export const PART_SEQ_SPAN = 1_000_000_000_000;

interface Part {
  part: number;
  firstAfter: string;
  lastId: string | null;
  cursor: string;
  nextSeq: string;
  done: boolean;
}

export interface ExtractTotals {
  employees: number;
  messages: number;
}

/** Extracts every part to its end, handing each committed chunk's messages to `publish`. */
export async function extract(ctx: RunContext, publish: (messages: StoredMessage[]) => Promise<void>): Promise<ExtractTotals> {
  const { pool, tables } = ctx.config;
  const parts = await planParts(ctx);
  const progress = new Progress(ctx.log, "extract");
  const totals = await currentTotals(ctx);
  const t: ExtractTables = { publishSchema: tables.publishSchema, messages: tables.messages, archive: tables.archive, watermark: tables.watermark };
  const perMessage = ctx.config.definition.parameters.records_per_hub_message;
  const sql = extractChunkSql(t, perMessage);

  const worker = async (part: Part) => {
    const client = await pool.connect();
    try {
      await client.query("SET work_mem = '64MB'; SET random_page_cost = 1.1");
      while (!part.done) {
        const rows = await extractChunk(ctx, client, t, sql, part);
        totals.messages += rows.length;
        totals.employees += rows.reduce((n, r) => n + r.record_count, 0);
        progress.tick(totals.employees, { messages: totals.messages });
        if (rows.length) {
          await publish(rows.map((r) => ({ transactionId: ctx.run.transactionId, seq: r.seq, messageId: r.message_id, tenantId: r.hub_tenant_id, destination: r.hub_destination, recordCount: r.record_count, body: r.body })));
        }
      }
    } finally {
      client.release();
    }
  };
  await Promise.all(parts.filter((p) => !p.done).map(worker));
  progress.tick(totals.employees, { messages: totals.messages }, true);
  return totals;
}

/** One chunk: pairs, messages and the part's cursor in one repeatable-read transaction (one snapshot for all three). */
async function extractChunk(ctx: RunContext, client: PoolClient, t: ExtractTables, sql: string, part: Part): Promise<ExtractedMessage[]> {
  const { definition, tables, tenants } = ctx.config;
  const p = definition.parameters;
  // Ids compare in PostgreSQL (its collation orders them), never in JavaScript.
  const end = await client.query<{ through: string | null }>(chunkEndSql(t), [part.cursor, ctx.settings.chunkSize, part.lastId]);
  const through = end.rows[0].through;
  if (through === null) {
    await client.query(`UPDATE ${tables.runPart} SET done = true WHERE transaction_id = $1 AND part = $2`, [ctx.run.transactionId, part.part]);
    part.done = true;
    return [];
  }
  const last = through === part.lastId;
  const result = await inTransaction(
    client,
    async () => {
      const pairs = await client.query<{ hub_tenant_id: string; country_code: string }>(chunkPairsSql(t), [tenants.map((x) => x.hubTenantId), tenants.map((x) => x.platRegion), part.cursor, through]);
      const { rows } = await client.query<ExtractedMessage>(
        sql,
        extractChunkValues({
          transactionId: ctx.run.transactionId,
          clientName: p.client_name,
          tenantIds: tenants.map((x) => x.hubTenantId),
          destinations: tenants.map((x) => x.hubDestination),
          platRegions: tenants.map((x) => x.platRegion),
          idlDate: p.idl_date,
          upperBound: ctx.run.upperBound,
          after: part.cursor,
          through,
          seqOffset: Number(part.nextSeq),
          systemCode: p.system_code,
          empTypeDefault: p.EmpTypeDefault,
          empGenderDefault: p.EmpGenderDefault,
          createdAt: new Date().toISOString(),
        }),
      );
      const employees = rows.reduce((n, r) => n + r.record_count, 0);
      await client.query(
        `UPDATE ${tables.runPart}
            SET cursor_id = $3, next_seq = next_seq + $4, messages = messages + $4, employees = employees + $5, done = $6,
                pairs = (SELECT coalesce(jsonb_agg(DISTINCT x), '[]') FROM (SELECT jsonb_array_elements(pairs) AS x UNION SELECT jsonb_array_elements($7::jsonb)) u)
          WHERE transaction_id = $1 AND part = $2`,
        [ctx.run.transactionId, part.part, through, rows.length, employees, last, JSON.stringify(pairs.rows.map((r) => [r.hub_tenant_id, r.country_code]))],
      );
      return rows;
    },
    "BEGIN ISOLATION LEVEL REPEATABLE READ",
  );
  // Only once committed: after a rollback the part stays where the database has it.
  part.cursor = through;
  part.nextSeq = String(Number(part.nextSeq) + result.length);
  part.done = last;
  return result;
}

/** The parts of this transaction, split at employee-id quantiles when the extract starts. */
async function planParts(ctx: RunContext): Promise<Part[]> {
  const { pool, tables } = ctx.config;
  const tx = ctx.run.transactionId;
  const load = async () =>
    (
      await pool.query<{ part: number; first_after: string; last_id: string | null; cursor_id: string; next_seq: string; done: boolean }>(
        `SELECT part, first_after, last_id, cursor_id, next_seq, done FROM ${tables.runPart} WHERE transaction_id = $1 ORDER BY part`,
        [tx],
      )
    ).rows.map((r) => ({ part: r.part, firstAfter: r.first_after, lastId: r.last_id, cursor: r.cursor_id, nextSeq: r.next_seq, done: r.done }));
  const existing = await load();
  if (existing.length > 0) return existing;

  const workers = ctx.settings.extractWorkers;
  const employee = `${tables.publishSchema}.${PUBLISH_TABLES.employee}`;
  const { rows: count } = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${employee}`);
  const n = Number(count[0].n);
  const splits: string[] = [];
  for (let k = 1; k < workers && n >= workers * ctx.settings.chunkSize; k++) {
    const { rows } = await pool.query<{ employee_id: string }>(`SELECT employee_id FROM ${employee} ORDER BY employee_id OFFSET $1 LIMIT 1`, [Math.floor((k * n) / workers)]);
    if (rows[0] && rows[0].employee_id !== splits[splits.length - 1]) splits.push(rows[0].employee_id);
  }
  const bounds = ["", ...splits];
  await pool.query(
    `INSERT INTO ${tables.runPart} (transaction_id, part, first_after, last_id, cursor_id, next_seq)
     SELECT $1, p - 1, a, l, a, (p - 1) * $4::bigint FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS u(a, l, p)
     ON CONFLICT DO NOTHING`,
    [tx, bounds, bounds.map((_, i) => splits[i] ?? null), PART_SEQ_SPAN],
  );
  return load();
}

async function currentTotals(ctx: RunContext): Promise<ExtractTotals> {
  const { rows } = await ctx.config.pool.query<{ employees: number; messages: number }>(
    `SELECT coalesce(sum(employees), 0)::int AS employees, coalesce(sum(messages), 0)::int AS messages FROM ${ctx.config.tables.runPart} WHERE transaction_id = $1`,
    [ctx.run.transactionId],
  );
  return rows[0];
}
