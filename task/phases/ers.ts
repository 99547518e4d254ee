/**
 * Step 5 of a run: the entities of the published messages go to the ERS API of their tenant, in batches of at most
 * records_per_ers_request, a few requests in flight. The entities are cut out of the stored message bodies in SQL
 * (their layout is fixed by the extract). Progress is the seq through which a transaction's entities were sent,
 * saved as batches complete in order: a resumed run starts after it.
 */
import { DATA_DOMAIN_CODE, ENTITY_NAME } from "../../core/hubContract";
import type { RunContext } from "../context";
import { postToHub } from "../hub/api";
import { Progress } from "../log";
import { saveErsProgress } from "../warehouse/runState";
import { ENTITIES_MARKER } from "../mapping/messageBody";

export interface ErsBatch {
  transactionId: string;
  tenantId: string;
  /** The entities' JSON texts, joined by commas. */
  entities: string;
  count: number;
  /** seq of the batch's last message. */
  lastSeq: string;
}

interface Row {
  published: boolean;
  seq: string;
  hub_tenant_id: string;
  record_count: number;
  entities: string;
}

/** Sends every published message's entities; returns the number of entities sent by this run. */
export async function sendEntities(ctx: RunContext): Promise<number> {
  const { pool, tables: t, definition, tenants } = ctx.config;
  const size = definition.parameters.records_per_ers_request;
  const tenantById = new Map(tenants.map((x) => [x.hubTenantId, x]));
  const progress = new Progress(ctx.log, "ers");
  // Driven by what is left in _MESSAGES, each message's status looked up by its key: never a scan of _STATUS, which
  // keeps every message of every run.
  const { rows: transactions } = await pool.query<{ transaction_id: string }>(
    `SELECT m.transaction_id FROM ${t.messages} m
       CROSS JOIN LATERAL (SELECT 1 FROM ${t.status} s WHERE s.message_id = m.message_id AND s.status = 'PUBLISHED' LIMIT 1) st
      GROUP BY m.transaction_id ORDER BY min(m.created_at)`,
  );
  let sent = 0;
  for (const { transaction_id: tx } of transactions) {
    const done = ctx.run.ersProgress[tx] ?? -1;
    // Batches complete out of order; progress moves to the end of the longest completed prefix.
    const open: { batch: ErsBatch; done: boolean }[] = [];
    const inFlight = new Set<Promise<void>>();
    let failure: unknown;
    let lastSave = Date.now();
    const settle = async () => {
      let moved = false;
      while (open.length && open[0].done) {
        ctx.run.ersProgress[tx] = Number(open.shift()!.batch.lastSeq);
        moved = true;
      }
      if (moved && Date.now() - lastSave > 2000) {
        lastSave = Date.now();
        await saveErsProgress(pool, t, ctx.run).catch(() => {});
      }
    };
    for await (const batch of batches(ctx, tx, done, size)) {
      if (failure) break;
      const tenant = tenantById.get(batch.tenantId);
      if (!tenant) continue; // a tenant removed from HUB_PLAT_CONFIG: nothing to send it with
      const entry = { batch, done: false };
      open.push(entry);
      const link = ctx.links.get("ers", tenant.region);
      while (inFlight.size >= Math.min(link.controller.ceiling, ctx.settings.pinned.ers ?? Infinity)) await Promise.race(inFlight);
      const body = ersRequestBody(tx, definition.parameters.system_code, batch.entities);
      const sentAt = Date.now();
      const request = postToHub(ctx.dispatcher, { api: "ERS", apiUrl: tenant.apis.ERS, tenantId: tenant.hubTenantId, credentialsString: tenant.credentialsString, body }, ctx.settings.retry, link)
        .then(async () => {
          ctx.log.debug({ event: "ers.batch", ms: Date.now() - sentAt, count: batch.count });
          batch.entities = ""; // sent: the text is no longer needed
          entry.done = true;
          sent += batch.count;
          progress.tick(sent);
          await settle();
        })
        .catch((err) => {
          failure ??= err;
        })
        .finally(() => inFlight.delete(request));
      inFlight.add(request);
    }
    await Promise.all(inFlight);
    await settle();
    await saveErsProgress(pool, t, ctx.run);
    if (failure) throw failure;
  }
  progress.tick(sent, {}, true);
  return sent;
}

/**
 * The ERS batches of a transaction after seq `after`: consecutive published messages of one tenant, up to `size`
 * entities. A message holding more than `size` entities is split.
 */
export async function* batches(ctx: RunContext, tx: string, after: number, size: number, pageSize = 1000): AsyncGenerator<ErsBatch> {
  const { pool, tables: t } = ctx.config;
  const marker = ENTITIES_MARKER.replace(/'/g, "''");
  let cursor = String(after);
  let current: ErsBatch | undefined;
  const parts: string[] = [];
  const flush = () => {
    const b = current!;
    b.entities = parts.join(",");
    parts.length = 0;
    current = undefined;
    return b;
  };
  for (;;) {
    const queryAt = Date.now();
    // A page of messages by seq (the index), then each one's status by its key: never a scan of either table.
    const { rows } = await pool.query<Row>(
      `SELECT p.seq, p.hub_tenant_id, p.record_count, st.status = 'PUBLISHED' AS published,
              CASE WHEN st.status = 'PUBLISHED' THEN substr(p.body, strpos(p.body, '${marker}') + ${ENTITIES_MARKER.length}, length(p.body) - strpos(p.body, '${marker}') - ${ENTITIES_MARKER.length + 1}) END AS entities
         FROM (SELECT message_id, seq, hub_tenant_id, record_count, body FROM ${t.messages} WHERE transaction_id = $1 AND seq > $2 ORDER BY seq LIMIT $3) p
         LEFT JOIN LATERAL (SELECT s.status FROM ${t.status} s WHERE s.message_id = p.message_id) st ON true
        ORDER BY p.seq`,
      [tx, cursor, pageSize],
    );
    ctx.log.debug({ event: "ers.page", ms: Date.now() - queryAt, rows: rows.length });
    if (rows.length === 0) break;
    cursor = rows[rows.length - 1].seq;
    for (const row of rows) {
      if (!row.published) continue; // failed: it stays for the next run, and goes to ERS once published
      if (current && (current.tenantId !== row.hub_tenant_id || current.count + row.record_count > size)) yield flush();
      if (row.record_count > size) {
        // Rare (records_per_hub_message > records_per_ers_request): split the message's entities.
        const slices = splitEntities(row.entities, size);
        for (const [i, slice] of slices.entries()) {
          // Only the last slice carries the seq: progress never passes a half-sent message.
          yield { transactionId: tx, tenantId: row.hub_tenant_id, entities: slice.join(","), count: slice.length, lastSeq: i === slices.length - 1 ? row.seq : cursorBefore(row.seq) };
        }
        continue;
      }
      current ??= { transactionId: tx, tenantId: row.hub_tenant_id, entities: "", count: 0, lastSeq: row.seq };
      parts.push(row.entities);
      current.count += row.record_count;
      current.lastSeq = row.seq;
    }
  }
  if (current) yield flush();
}

/** The ERS request of a transaction's entities (their JSON texts, joined by commas). */
export function ersRequestBody(transactionId: string, systemCode: string, entities: string): string {
  return `{"transactionId":"${transactionId}","systemCode":${JSON.stringify(systemCode)},"dataDomainCode":"${DATA_DOMAIN_CODE}","entityName":"${ENTITY_NAME}","entities":[${entities}]}`;
}

/** Splits one message's entities (JSON texts joined by commas) into slices of at most `size`. */
export function splitEntities(entities: string, size: number): string[][] {
  const all = (JSON.parse(`[${entities}]`) as unknown[]).map((e) => JSON.stringify(e));
  const slices: string[][] = [];
  for (let i = 0; i < all.length; i += size) slices.push(all.slice(i, i + size));
  return slices;
}

function cursorBefore(seq: string): string {
  return String(Number(seq) - 1);
}
