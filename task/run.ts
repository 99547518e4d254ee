/**
 * A run of the export task (task/README.md, "A run"). Exit codes: 0 ExecutionCompleted; 3 ExecutionFailed (messages
 * failed; the next run retries them); 1 refused before touching data, or stopped (the next run resumes it).
 */
import { UserError } from "../core/errors";
import { asUserError } from "../core/refusals";
import { EXIT } from "../core/exitCodes";
import { createLogger, round, type Logger } from "./log";
import { loadRunConfiguration, type RunInputs } from "./load/configuration";
import { settingsFromEnv, type RunContext, type RunSettings } from "./context";
import { createAgent, HubHttp } from "./http/client";
import { Links } from "./http/links";
import {
  closeRun,
  lockClient,
  openRun,
  setPhase,
  markStartedReported,
  unlockClient,
  RunLockHeld,
  type FinalCounts,
  type IntakeJobStatus,
  type OpenedRun,
  type RunState,
} from "./warehouse/runState";
import { extract, type ExtractTotals } from "./phases/extract";
import { Publisher, pendingMessages } from "./phases/publish";
import type { StoredMessage } from "./warehouse/archive";
import { sendEntities } from "./phases/ers";
import { countsSoFar, finish, recordIntakeJob, HISTORY_ACTOR } from "./phases/finish";
import { findBadRowsUpFront, type BadRowsReport } from "./phases/badRows";
import { lastOpenLinks, recordRunHistory } from "./warehouse/runHistory";
import { hrsysStatus, reportIntakeJob } from "./phases/intakeJob";
import { HubApiError } from "./hub/api";
import { countsPerRegion, emitRunMetrics } from "./metrics";
import { requeueFailedSql } from "./warehouse/archive";
import { CodeCheck, loadCurrentSheet, type ClsInputs } from "./cls/codeCheck";
import { RunStop, RunStopped, stopOnSignals } from "./stop";
import {
  closePools,
  connectionLost,
  inTransaction,
  watchSessions,
  whileLost,
  withDeadline,
} from "./warehouse/database";
import type { PoolClient } from "pg";

export interface RunOptions {
  log?: Logger;
  settings?: Partial<RunSettings>;
  /** The unknown-code check: the current CLS load sheet and the mode (none: no check). */
  cls?: ClsInputs;
}

export async function runExport(inputs: RunInputs, options: RunOptions = {}): Promise<number> {
  const log = options.log ?? createLogger();
  const started = Date.now();
  let settings: RunSettings;
  try {
    settings = { ...settingsFromEnv(), ...options.settings };
  } catch (err) {
    refused(log, err);
  }
  // SIGTERM (ECS stops the task) and the run deadline: a clean, recorded, resumable stop (task/stop.ts).
  let run: RunState | undefined;
  const records: RunRecords = { history: "pending", acknowledgements: () => [], acknowledgementsSaid: false };
  const exitNow = (why: string) => {
    // The grace period ended (or a second signal came) before the run recorded its outcome: said once, here.
    if (run && records.history === "pending")
      log.warn(
        { event: "history.unrecorded", reason: why },
        "the run's outcome could not be recorded in the run history",
      );
    const unrecorded = sayUnrecorded(log, records);
    // The same lines a stop that ends by itself prints (cli/command.ts): what happened, and what the next run does.
    process.stderr.write(
      new RunStopped(`${why} (phase ${run?.phase ?? "open"})`, sendAgain(unrecorded)).lines.join("\n") + "\n",
    );
    log.error(
      {
        event: "run.stopped",
        transactionId: run?.transactionId,
        phase: run?.phase,
        reason: why,
        seconds: round((Date.now() - started) / 1000),
        ...(unrecorded.length ? { unrecordedMessages: unrecorded.length } : {}),
      },
      "run stopped at once; the next run resumes its transaction",
    );
    process.exit(EXIT.failed);
  };
  const stop = new RunStop({
    graceMs: settings.stopGraceSeconds * 1000,
    onRequest: (reason) =>
      log.warn(
        { event: "run.stopping", reason, graceSeconds: settings.stopGraceSeconds },
        "stopping: no new work; requests in flight finish or are abandoned, then the run records where it is",
      ),
    onGraceEnd: (reason) => exitNow(`${reason}; the grace period of ${settings.stopGraceSeconds} s ended`),
  });
  stop.deadline(settings.runDeadlineSeconds);
  const detachSignals = stopOnSignals(stop, (signal) => exitNow(`${stop.reason}, then ${signal} again`));
  log.info(
    { event: "run.start", definition: inputs.definition, scripts: inputs.scripts, connections: inputs.connections },
    "export task starting",
  );
  try {
    return await performRun(inputs, options, { log, settings, stop, started, records, opened: (r) => (run = r) });
  } finally {
    detachSignals();
    stop.dispose();
  }
}

interface RunScope {
  log: Logger;
  settings: RunSettings;
  stop: RunStop;
  started: number;
  /** What the run recorded of its end, for the grace period's end to say what it could not. */
  records: RunRecords;
  /** Tells the signal handlers which run they stop. */
  opened(run: RunState): void;
}

/**
 * What a stopping run recorded: whether its history row is written, or its failure logged (`history.unrecorded`,
 * once); the acknowledgements it could not record (the publisher's), logged once (`publish.unrecorded`).
 */
interface RunRecords {
  history: "pending" | "recorded" | "logged";
  acknowledgements: () => string[];
  acknowledgementsSaid: boolean;
}

/** The line of a stop's message that says which messages the next run sends again, when there are any. */
function sendAgain(unrecorded: string[]): string[] {
  return unrecorded.length
    ? [
        `${unrecorded.length} message(s) the hub acknowledged are not recorded as published: the next run sends them again (their ids: the log's publish.unrecorded line)`,
      ]
    : [];
}

/**
 * Logs once the messages the hub acknowledged that the run could not record as published (the warehouse did not
 * answer in time): the next run sends them again. Returns their ids.
 */
function sayUnrecorded(log: Logger, records: RunRecords): string[] {
  const ids = records.acknowledgements();
  if (ids.length && !records.acknowledgementsSaid)
    log.warn(
      { event: "publish.unrecorded", messages: ids.length, messageIds: ids },
      `${ids.length} message(s) the hub acknowledged could not be recorded as published (the warehouse did not answer in time): the next run sends them again under the same messageIds`,
    );
  records.acknowledgementsSaid = true;
  return ids;
}

/** The run itself, from the load to the end; runExport wraps it in its stop (signals, deadline, grace period). */
async function performRun(inputs: RunInputs, options: RunOptions, scope: RunScope): Promise<number> {
  const { log, settings, stop, started } = scope;
  const phases: Record<string, number> = {};
  const timed = async <T>(name: string, work: () => Promise<T>): Promise<T> => {
    const t = Date.now();
    try {
      return await work();
    } finally {
      phases[name] = round((phases[name] ?? 0) + (Date.now() - t) / 1000);
    }
  };
  const load = <T>(work: () => Promise<T>) => timed("load", work).catch((err: unknown) => refused(log, err));
  const sheet = options.cls ? await load(() => loadCurrentSheet(options.cls!.sheet)) : undefined;
  const config = await load(() => loadRunConfiguration(inputs, log, settings.warehouseDeadline));
  // A link that opens stops its work for the run; the run records it and the next run probes it first (breaker.ts).
  const links = new Links(settings.concurrency, {
    settings: settings.breaker,
    onOpen: (b) =>
      log.warn(
        { event: "link.open", link: b.name, why: b.why, lastError: b.lastError },
        `hub link ${b.name} is open: its work stops for this run and stays queued; the next run tries it again first`,
      ),
  });
  // The last line's figures, run.done and run.stopped alike.
  const usage = (seconds: number) => ({
    seconds,
    phases,
    peakRssMb: peakRssMb(),
    links: links.snapshot(),
    breakers: links.breakerSnapshot(),
  });
  const dispatcher = createAgent(links.connectionsPerOrigin(config.tenants.map((x) => x.region)));
  const http = new HubHttp(dispatcher, settings.retry, settings.limits, stop);
  const params = config.definition.parameters;
  // A session lost while the run has it (the warehouse restarted, an administrator ended it): a clean stop.
  let lost: string | undefined;
  const onLost = (reason: string) => {
    lost ??= reason;
    stop.request(reason);
  };
  watchSessions(config.pool, onLost);
  watchSessions(config.ackPool, onLost);
  const lock = await config.pool.connect().catch(async (err: unknown) => {
    await Promise.allSettled([closePools(config.pool, config.ackPool), dispatcher.close()]);
    const why = connectionLost(err);
    if (why) log.error({ event: "run.refused", problems: [why] }, "run refused: nothing was touched");
    throw why
      ? new UserError([`run refused: ${why}`, "nothing was touched; run again once the warehouse accepts connections"])
      : err;
  });
  let run: OpenedRun | undefined;
  try {
    await lockClient(lock, params.client_name);
    stop.throwIfStopping();
    run = await openRun(lock, config.tables, config.definition);
    scope.opened(run);
    const probing = await lastOpenLinks(lock, config.tables, params.job_name);
    if (probing.length) {
      links.probeFirst(probing);
      log.info(
        { event: "link.probe", links: probing },
        `the last run left ${probing.join(", ")} open: one probe request first`,
      );
    }
    let ctx: RunContext = { config, run, log, http, stop, settings, links };
    // The extraction's statements (chunks, the lookup of changed rows) may read whole tables: a deadline of their own.
    const extracting = (): RunContext => ({
      ...ctx,
      config: { ...config, pool: withDeadline(config.pool, settings.extractDeadline) },
    });
    if (run.phase === "REPORT") {
      // The previous run finished in the database but did not tell HRSYS: do that first, then start anew.
      log.info({ event: "run.report", transactionId: run.transactionId }, "reporting the previous run's intake job");
      await reportIntakeJob(ctx, hrsysStatus(run.finalStatus!), run.finalCounts!);
      await completeRun(lock, ctx, run.finalStatus!, run.finalCounts!, started);
      stop.throwIfStopping();
      run = await openRun(lock, config.tables, config.definition);
      scope.opened(run);
      ctx = { ...ctx, run };
    }
    log.info(
      {
        event: "run.open",
        transactionId: run.transactionId,
        resumed: run.resumed,
        phase: run.phase,
        attempt: run.attempts,
        upperBound: run.upperBound,
        jobName: params.job_name,
        clientName: params.client_name,
        tenants: config.tenants.map((x) => ({
          tenantId: x.hubTenantId,
          region: x.region,
          destination: x.hubDestination,
        })),
      },
      run.resumed ? "resuming the unfinished transaction" : "opened a new transaction",
    );
    logUpperBound(log, run);
    if (!run.startedReported) {
      await timed("report", () => reportIntakeJob(ctx, "STARTED"));
      await markStartedReported(lock, config.tables, run);
    }

    let streamed = 0;
    let ersFailed = 0;
    let badRows: BadRowsReport | undefined;
    let changes: ExtractTotals["changes"];
    // Before publishing: the codes of each batch against the current CLS load sheet (task/cls/codeCheck.ts).
    const check = sheet ? new CodeCheck(ctx, sheet, options.cls!.mode) : undefined;
    const screened = async (messages: StoredMessage[]) => (check ? check.screen(messages) : messages);
    if (run.phase === "EXTRACT" || run.phase === "PUBLISH") {
      const requeued = await config.pool.query(requeueFailedSql(config.tables));
      if (requeued.rowCount)
        log.info(
          { event: "run.requeued", messages: requeued.rowCount },
          "failed messages of earlier runs are retried under their messageIds",
        );
      const publisher = new Publisher(ctx);
      scope.records.acknowledgements = () => publisher.status.unrecorded();
      // A stop takes no next page or chunk; what is stored and not published stays queued for the next run.
      const submit = async (messages: StoredMessage[]) => {
        stop.throwIfStopping();
        await publisher.submit(await screened(messages));
      };
      try {
        const resumeAt = new Date((await config.pool.query<{ now: Date }>("SELECT now()")).rows[0].now);
        await check?.releaseHeld();
        await timed("publishPending", async () => {
          for await (const page of pendingMessages(ctx, resumeAt)) await submit(page);
        });
        if (run.phase === "EXTRACT") {
          // Rows no chunk can hold (no id) and changes dated in the future: reported, found before publishing.
          badRows = await timed("extract", () => findBadRowsUpFront(extracting()));
          const totals = await timed("extract", () =>
            extract(extracting(), submit, (superseded) => publisher.forget(superseded), check?.knownCodes),
          );
          changes = totals.changes;
          stop.throwIfStopping();
          await setPhase(lock, config.tables, run, "PUBLISH");
          log.info({ event: "extract.done", ...totals }, "extract done");
        }
        await timed("publishDrain", () => publisher.drain());
      } catch (err) {
        // Stopping, or failing (a database error, a refusal the hub contract stops on): no new work; the batches in
        // flight finish (or are abandoned) and their acknowledgements are recorded before the run records its end.
        if (!(err instanceof RunStopped)) stop.request(connectionLost(err) ?? firstLine(err));
        await publisher.drain().catch(() => {});
        throw err;
      }
      stop.throwIfStopping();
      log.info({ event: "publish.done", ...publisher.counts() }, "publish done");
      check?.logSummary();
      streamed = publisher.ers.sent;
      ersFailed = publisher.ers.failedEntities;
      await setPhase(lock, config.tables, run, "ERS");
    }
    if (run.phase === "ERS") {
      // Only what the publish could not send along (ERS failing, or a run resumed here) is left.
      const ers = await timed("ers", () => sendEntities(ctx));
      ersFailed += ers.failed;
      log.info(
        {
          event: "ers.done",
          entities: streamed + ers.sent,
          streamed,
          ...(ersFailed ? { failedEntities: ersFailed } : {}),
        },
        "ERS done",
      );
    }
    stop.throwIfStopping();
    // A run resumed past its extract looks for them now: its history reports every bad row all the same.
    badRows ??= await timed("finish", () => findBadRowsUpFront(extracting()));
    // Failures the hub contract says to record (onFailure: record) go into the run's history row.
    const open = links.open();
    const recorded = {
      ...(ersFailed ? { ersFailedEntities: ersFailed } : {}),
      ...(Object.keys(open).length ? { openLinks: open } : {}),
    };
    const result = await timed("finish", () =>
      finish(
        ctx,
        lock,
        { ...recorded, ...(changes ? { changes } : {}), ...(check ? { unknownCodes: check.summary() } : {}) },
        badRows,
      ),
    );
    stop.throwIfStopping();
    await timed("report", () => reportIntakeJob(ctx, hrsysStatus(result.status), result.counts));
    // Nothing can fail any more: HUB_INTAKE_JOB gets its row (a completed run) as the run closes.
    // The metrics first (completeRun): run.done stays the run's last line.
    await completeRun(lock, ctx, result.status, result.counts, started);
    const { tenants: _perTenant, ...counts } = result.counts;
    log.info(
      {
        event: "run.done",
        transactionId: run.transactionId,
        status: result.status,
        ...counts,
        ...(ersFailed ? { ersFailedEntities: ersFailed } : {}),
        ...(changes ? { changes } : {}),
        ...usage(round((Date.now() - started) / 1000)),
      },
      `run ${result.status}`,
    );
    return result.status === "ExecutionCompleted" ? EXIT.ok : EXIT.executionFailed;
  } catch (err) {
    // A lost warehouse stops the run as a stop request does: its grace period bounds what the run still records.
    const lostReason = err instanceof RunStopped ? undefined : (lost ?? connectionLost(err));
    if (lostReason) stop.request(lostReason);
    // A foreign state's refusal (a shared table changed, a full disk: core/refusals.ts) is the user's to fix, not a bug.
    const refused = lostReason || err instanceof UserError || err instanceof HubApiError ? undefined : asUserError(err);
    const reason = err instanceof RunStopped ? err.reason : (lostReason ?? firstLine(err));
    const seconds = round((Date.now() - started) / 1000);
    const outcome = err instanceof RunLockHeld ? "Refused" : "Stopped";
    const open = links.open();
    emitRunMetrics(log, { jobName: params.job_name, outcome, seconds, openLinks: Object.keys(open) });
    // Best effort: the database may be what stopped the run. On a fresh session (the run's own may be gone), again
    // while the warehouse is away, within the grace period. The reason's first line only (no stack trace), and what
    // the run had done so far (status and the summary show a stopped run's own counts).
    const fresh = <T>(work: () => Promise<T>) => whileLost(work, () => stop.graceEnd());
    const unrecorded = sayUnrecorded(log, scope.records);
    const soFar =
      run && outcome === "Stopped"
        ? await fresh(() => countsSoFar(config.pool, config.tables, run!)).catch(() => null)
        : null;
    await fresh(() =>
      recordRunHistory(config.pool, config.tables, {
        clientName: params.client_name,
        jobName: params.job_name,
        transactionId: run?.transactionId ?? null,
        event: outcome,
        actor: HISTORY_ACTOR,
        detail: {
          phase: run?.phase ?? null,
          seconds,
          reason,
          ...(soFar ? { ...soFar, countsSoFar: true } : {}),
          ...(Object.keys(open).length ? { openLinks: open } : {}),
          ...(unrecorded.length ? { unrecorded: { messages: unrecorded.length, messageIds: unrecorded } } : {}),
        },
      }),
    )
      .then(() => (scope.records.history = "recorded"))
      .catch((e: Error) => {
        scope.records.history = "logged";
        log.warn(
          { event: "history.unrecorded", reason: e.message },
          "the run's outcome could not be recorded in the run history",
        );
      });
    // The run's last line says how it ended.
    if (err instanceof RunLockHeld)
      log.error(
        { event: "run.refused", problems: err.lines, seconds },
        "run refused: another run holds the client's run lock; nothing was touched",
      );
    else {
      const detail =
        err instanceof RunStopped
          ? err.reason
          : (lostReason ??
            refused?.message ??
            (err instanceof HubApiError || err instanceof UserError
              ? err.message
              : String((err as Error)?.stack ?? err)));
      log.error(
        {
          event: "run.stopped",
          transactionId: run?.transactionId,
          phase: run?.phase,
          reason: detail,
          ...(unrecorded.length ? { unrecordedMessages: unrecorded.length } : {}),
          ...usage(seconds),
        },
        "run stopped; the next run resumes its transaction",
      );
    }
    if (err instanceof HubApiError || refused)
      throw new UserError([
        `run stopped in phase ${run?.phase ?? "open"}: ${(refused ?? (err as Error)).message}`,
        "the next run resumes the transaction",
        ...sendAgain(unrecorded),
      ]);
    if (err instanceof RunStopped || lostReason)
      throw new RunStopped(`${reason} (phase ${run?.phase ?? "open"})`, sendAgain(unrecorded));
    throw err;
  } finally {
    // A session of a lost warehouse is given up, not asked to unlock: its end releases the run lock.
    if (lost) lock.release(new Error(lost));
    else {
      await unlockClient(lock, params.client_name).catch(() => {});
      lock.release();
    }
    await Promise.allSettled([closePools(config.pool, config.ackPool), dispatcher.close()]);
  }
}

/**
 * The run is over: a completed run's HUB_INTAKE_JOB row and the end of HUB_EXPORT_RUN's row, in one transaction; then
 * its metrics. A run stopped in its final report is completed by the next run, which emits them then (its counts, and
 * MessagesSetAside, whose alarm is the only call to decide on a message set aside): `seconds` is this process's time.
 */
async function completeRun(
  lock: PoolClient,
  ctx: RunContext,
  status: IntakeJobStatus,
  counts: FinalCounts,
  started: number,
): Promise<void> {
  await inTransaction(lock, async () => {
    await recordIntakeJob(lock, ctx, status, counts);
    await closeRun(lock, ctx.config.tables, ctx.run);
  });
  const { config } = ctx;
  const seconds = round((Date.now() - started) / 1000);
  emitRunMetrics(ctx.log, {
    jobName: config.definition.parameters.job_name,
    outcome: status,
    seconds,
    regions: countsPerRegion(config.tenants, counts),
    totals: { heldBack: counts.heldBack, setAside: counts.setAside },
    openLinks: Object.keys(ctx.links.open()),
  });
}

/** A hold of the upper bound longer than this is worth a warning: changes since wait for the transaction to end. */
const LONG_HOLD_SECONDS = 15 * 60;

/** Why a new run's upper bound is where it is, when that is worth knowing (task/README.md, "Change capture"). */
function logUpperBound(log: Logger, run: OpenedRun): void {
  if (run.resumed) return;
  const { heldBy } = run;
  if (heldBy) {
    const line = { event: "run.upperBound", upperBound: run.upperBound, heldBy };
    if (heldBy.seconds > LONG_HOLD_SECONDS)
      log.warn(
        line,
        `an open transaction (session pid ${heldBy.pid}${heldBy.applicationName ? `, ${heldBy.applicationName}` : ""}) started ${heldBy.seconds} s before this run: changes since then wait for it to end`,
      );
    else log.info(line, "the upper bound stays below the oldest open transaction of the warehouse");
  }
  if (!run.horizonKnown)
    log.warn(
      { event: "run.upperBound", upperBound: run.upperBound },
      "the run tables lack the oldest-transaction function (an earlier build): the upper bound rests on change_lag_seconds alone; apply this build's run tables ('pulumi up')",
    );
  if (run.hiddenSessions > 0)
    log.warn(
      { event: "run.upperBound", hiddenSessions: run.hiddenSessions },
      `${run.hiddenSessions} session(s) of the warehouse are invisible to the role that owns the run tables: their transactions cannot hold the upper bound back (grant it pg_read_all_stats, or rely on change_lag_seconds)`,
    );
}

/** A refusal before anything is touched: a UserError's lines go to the log; the error is thrown on. */
function refused(log: Logger, err: unknown): never {
  if (err instanceof UserError)
    log.error({ event: "run.refused", problems: err.lines }, "run refused: nothing was touched");
  throw err;
}

/** An error's message, its first line only (no stack trace). */
function firstLine(err: unknown): string {
  return String((err as Error)?.message ?? err).split("\n")[0];
}

/** The process's peak resident set (VmHWM), in MB. */
export function peakRssMb(): number {
  return round(process.resourceUsage().maxRSS / 1024);
}
