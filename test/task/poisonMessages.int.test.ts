/**
 * Messages that can never be sent: a message the broker refuses for good (here: over its size limit) is retried by
 * set_aside_after_runs runs, then set aside with its reason, and the run completes with a warning, a metric and a
 * status line; an operator retries or discards it (each recorded in the run history); a newer extract of the same
 * employees supersedes an older failed or set-aside message instead of retrying it.
 */
import { Client } from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { employeeIds, exportFixture, lastHistory, type ExportFixture, statusOf } from "../support/exportFixture";
import { runTask, taskBundle, type TaskResult } from "../support/taskProcess";
import { runMain } from "../support/cli";
import { fixtureStackFile } from "../fixtures/stacks";
import { QUEUES } from "../../bench/platform";
import { ALL_REGIONS, METRICS, isEmfRecord } from "../../core/metrics";

const ENV = { HUB_EXPORT_CHUNK_SIZE: "100" };
/** Over the broker's 10 MB body limit. */
const TOO_WIDE = 11_000_000;

async function setLine1(f: ExportFixture, employeeId: string, text: string | number): Promise<void> {
  await f.pool.query(
    `UPDATE ${f.platform.publishSchema}.employee_address SET line1 = ${typeof text === "number" ? "repeat('x', $2::int)" : "$2"}, changed_at = localtimestamp WHERE address_id = $1 || '-A1'`,
    [employeeId, text],
  );
}

const STATUS_COLUMNS = "s.message_id, s.status, s.reason, s.refusals, s.attempts, s.transaction_id, s.superseded_by";

/** The status row of the latest message carrying the employee. */
async function messageStatusOf(f: ExportFixture, employeeId: string) {
  const { rows } = await f.pool.query(
    `SELECT ${STATUS_COLUMNS} FROM ${f.t.archive} a JOIN ${f.t.status} s USING (message_id) WHERE $1 = ANY(a.employee_ids) ORDER BY a.created_at DESC LIMIT 1`,
    [employeeId],
  );
  return rows[0];
}

async function statusById(f: ExportFixture, messageId: string) {
  return (await f.pool.query(`SELECT ${STATUS_COLUMNS} FROM ${f.t.status} s WHERE message_id = $1`, [messageId]))
    .rows[0];
}

const storedIds = (f: ExportFixture) =>
  (f.emulator.state({ messages: true }).queues.US.destinations[QUEUES.US.queueName]?.messages ?? []).map(
    (m) => m.messageId,
  );
const metric = (r: TaskResult, name: string) =>
  r.events.filter(isEmfRecord).find((e) => e.Region === ALL_REGIONS)?.[name];

describe("a message the broker refuses for good", () => {
  let f: ExportFixture;
  let wide: string;
  let messageId: string;
  const cli = (...args: string[]) => runMain([...args, "--file", fixtureStackFile("qa"), "--database-url", f.db.url]);
  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 200, parameters: { set_aside_after_runs: 2 } }), taskBundle()]);
    [wide] = await employeeIds(f, 1);
    await setLine1(f, wide, TOO_WIDE);
  });
  afterAll(async () => f?.close());

  it("fails the first run, and is set aside by the second: that run completes with a warning, a metric and its reason", async () => {
    const first = await runTask(f.platform.args, ENV);
    expect(first.code).toBe(3);
    const failed = await messageStatusOf(f, wide);
    expect(failed).toMatchObject({ status: "FAILED", refusals: 1 });
    expect(failed.reason).toMatch(/^message body of \d+ bytes exceeds the broker's limit of 10485760$/);
    messageId = failed.message_id;

    const second = await runTask(f.platform.args, ENV);
    expect(second.stderr).toBe("");
    expect(second.code).toBe(0);
    const aside = await messageStatusOf(f, wide);
    // Each run's try counts, though a message over the limit is refused before it is sent.
    expect(aside).toMatchObject({ message_id: messageId, status: "SET_ASIDE", refusals: 2, attempts: 2 });
    expect(aside.reason).toMatch(
      /^set aside after 2 run\(s\) refused it for good; last refusal: message body of \d+ bytes exceeds the broker's limit/,
    );
    expect(second.events.filter((e) => e.event === "publish.setAside")).toEqual([
      expect.objectContaining({ level: "warn", messageId, employeeIds: [wide] }),
    ]);
    expect(metric(second, METRICS.setAside)).toBe(1);
    expect(metric(second, METRICS.completed)).toBe(1);
    expect(await lastHistory(f)).toMatchObject({
      event: "ExecutionCompleted",
      detail: { setAside: 1, failed: 0, setAsideMessages: [{ messageId, employeeIds: [wide], reason: aside.reason }] },
    });
    expect(storedIds(f)).not.toContain(messageId);

    // hub-export status: the run's warning, and the set-aside message with its reason.
    const status = await statusOf(f);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain("warning: 1 message(s) set aside by this run");
    const section = status.stdout.slice(status.stdout.indexOf("Set-aside messages"));
    expect(section).toMatch(
      new RegExp(
        `^  ${messageId}  SET_ASIDE .* 1 record\\(s\\): ${wide}  attempts 2  set aside after 2 run\\(s\\)`,
        "m",
      ),
    );
  });

  it("is not retried by the next run", async () => {
    const before = await messageStatusOf(f, wide);
    const third = await runTask(f.platform.args, ENV);
    expect(third.code).toBe(0);
    expect(await messageStatusOf(f, wide)).toEqual(before);
    expect(metric(third, METRICS.setAside)).toBe(0);
  });

  it("retry: the next run tries it once more, and sets it aside again at once; discard: no run sends it again", async () => {
    const retry = await cli(
      "retry",
      "--message-id",
      messageId,
      "--actor",
      "alice",
      "--reason",
      "the hub takes larger messages now",
    );
    expect(retry.stderr).toBe("");
    expect(retry.code).toBe(0);
    expect(retry.stdout).toMatch(
      /^Database: \w+ on \S+ as postgres \(--database-url\)\nRetry recorded in HUB_EXPORT_RUN_HISTORY \(id \d+\) at \S+ by alice:\n/,
    );
    expect(retry.stdout).toContain(`message ${messageId} (tenant `);
    expect(retry.stdout).toContain("SET_ASIDE -> FAILED");
    expect(await messageStatusOf(f, wide)).toMatchObject({
      status: "FAILED",
      reason: "retry by alice: the hub takes larger messages now",
    });
    const { rows: history } = await f.pool.query(
      `SELECT event, actor, transaction_id, detail FROM ${f.t.runHistory} WHERE event = 'Retry'`,
    );
    expect(history).toEqual([
      {
        event: "Retry",
        actor: "alice",
        transaction_id: null,
        detail: expect.objectContaining({
          messageId,
          previousStatus: "SET_ASIDE",
          status: "FAILED",
          employeeIds: [wide],
          reason: "the hub takes larger messages now",
          databaseUser: "postgres",
        }),
      },
    ]);

    const run = await runTask(f.platform.args, ENV);
    expect(run.code).toBe(0);
    const again = await messageStatusOf(f, wide);
    expect(again.status).toBe("SET_ASIDE");
    expect(run.events.some((e) => e.event === "publish.setAside" && e.messageId === messageId)).toBe(true);

    const discard = await cli(
      "discard",
      "--message-id",
      messageId,
      "--actor",
      "bob",
      "--reason",
      "HR shortens the row; its next change sends it",
      "--json",
    );
    expect(discard.code, discard.stderr).toBe(0);
    expect(JSON.parse(discard.stdout)).toMatchObject({
      action: "Discard",
      messageId,
      previousStatus: "SET_ASIDE",
      status: "DISCARDED",
      employeeIds: [wide],
    });
    const discarded = await messageStatusOf(f, wide);
    expect(discarded).toMatchObject({
      status: "DISCARDED",
      reason: "discard by bob: HR shortens the row; its next change sends it",
    });
    const after = await runTask(f.platform.args, ENV);
    expect(after.code).toBe(0);
    expect(await messageStatusOf(f, wide)).toEqual(discarded);

    const refused = await cli("retry", "--message-id", messageId);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `message ${messageId} is discarded: no run sends it again (its employees' next change does)\n`,
    );
    const unknown = await cli("discard", "--message-id", "00000000-0000-4000-8000-000000000001");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(
      /^no message 00000000-0000-4000-8000-000000000001 in staging\.HUB_ACME_MESSAGES_ARCHIVE \(client ACME\)/,
    );
    const usage = await cli("discard", "--message-id", "M-1");
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("--message-id must be a messageId (a UUID), got 'M-1'");
  });

  it("discard and retry refuse while a run holds the client's run lock, and change nothing", async () => {
    const holder = new Client({ connectionString: f.db.url, application_name: "hub-export" });
    await holder.connect();
    try {
      await holder.query("SELECT pg_advisory_lock(hashtext('hub-export'), hashtext('ACME'))");
      const before = await messageStatusOf(f, wide);
      const r = await cli("discard", "--message-id", messageId);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        /^a run of client ACME is working now \(session pid \d+, hub-export, connected since \S+\): discard refuses while it holds the run lock\n/,
      );
      expect(await messageStatusOf(f, wide)).toEqual(before);
    } finally {
      await holder.end();
    }
  });
});

describe("a newer extract of the same employee", () => {
  let f: ExportFixture;
  let failing: string;
  let setAside: string;
  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 200, parameters: { set_aside_after_runs: 3 } }), taskBundle()]);
    [setAside, failing] = await employeeIds(f, 2);
  });
  afterAll(async () => f?.close());

  it("supersedes the older failed or set-aside message: not retried, not counted as failed, never sent", async () => {
    await setLine1(f, setAside, TOO_WIDE);
    expect((await runTask(f.platform.args, ENV)).code).toBe(3);
    expect((await runTask(f.platform.args, ENV)).code).toBe(3);
    await setLine1(f, failing, TOO_WIDE);
    // The third refusal sets the first aside (the run completes); the other fails.
    expect((await runTask(f.platform.args, ENV)).code).toBe(3);
    const old = { aside: await messageStatusOf(f, setAside), failed: await messageStatusOf(f, failing) };
    expect(old.aside.status).toBe("SET_ASIDE");
    expect(old.failed.status).toBe("FAILED");

    // HR fixes both rows: the next run extracts both employees again.
    await setLine1(f, setAside, "1 Main St");
    await setLine1(f, failing, "2 Main St");
    const run = await runTask(f.platform.args, ENV);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    for (const [employee, before] of [
      [setAside, old.aside],
      [failing, old.failed],
    ] as const) {
      const newer = await messageStatusOf(f, employee);
      expect(newer.status).toBe("PUBLISHED");
      const superseded = await statusById(f, before.message_id);
      expect(superseded).toMatchObject({
        message_id: before.message_id,
        status: "SUPERSEDED",
        superseded_by: newer.message_id,
      });
      expect(superseded.reason).toMatch(
        new RegExp(
          `^superseded by message ${newer.message_id} of transaction ${newer.transaction_id}, which carries a newer state of its employees \\(it was ${before.status}: `,
        ),
      );
      expect(storedIds(f)).toContain(newer.message_id);
      expect(storedIds(f)).not.toContain(before.message_id);
    }
    expect(run.events.filter((e) => e.event === "extract.superseded")).toHaveLength(2);
    expect((await lastHistory(f)).detail).toMatchObject({ failed: 0, setAside: 0 });

    const after = await statusById(f, old.failed.message_id);
    expect((await runTask(f.platform.args, ENV)).code).toBe(0);
    expect(await statusById(f, old.failed.message_id)).toEqual(after);
  });
});
