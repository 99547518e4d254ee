/**
 * `npm run bench:outage`: a dead or dying hub (the emulator's faults) and how long it holds a run of the bundled task,
 * `--dead-runs` times, then once against the healed hub. HUB_EXPORT_* variables pass through to the task;
 * BENCH_TASK_BUNDLE=<index.js> runs another build. It never fails on timing.
 */
import { Pool } from "pg";
import { QUEUES, startBenchPlatform } from "./platform";
import { SAMPLE_LOADER_ROLE, seedSampleEmployees } from "../task/model/sampleData";
import { parseFaultSpec, FaultSpecError, type FaultStats } from "../emulator/faults";
import { UsageError } from "../core/errors";
import { intOption, parseCommandArgs, type Options as CommandOptions } from "../cli/command";
import { runAndWatch, UserCpu } from "./export";

export const summary =
  "A dead or dying hub (the emulator's faults) against N queued messages: per run, the seconds until the task stopped, what it recorded, what the hub saw, what is left queued; then the next runs";
export const options = {
  messages: {
    type: "string",
    value: "N",
    description: "Messages to publish: sample employees of the US and EU tenants",
    default: "3000",
    example: "--messages 20",
  },
  faults: {
    type: "string",
    value: "SPEC",
    description: "The dead hub, as `hub-export emulator --faults`",
    default: "queue.publish:silence=1",
    example: "--faults 'queue.publish.EU:drip=1'",
  },
  "dead-runs": {
    type: "string",
    value: "N",
    description: "Runs against the dead hub (the second shows the next run's probe), before one against the healed hub",
    default: "2",
    example: "--dead-runs 1",
  },
} satisfies CommandOptions;

function parse(argv: string[]) {
  const values = parseCommandArgs(options, argv);
  try {
    parseFaultSpec(values.faults ?? "");
  } catch (err) {
    if (err instanceof FaultSpecError) throw new UsageError(`--faults: ${err.message}`);
    throw err;
  }
  return {
    messages: intOption("messages", values.messages),
    faults: values.faults ?? "",
    deadRuns: intOption("dead-runs", values["dead-runs"]),
  };
}

const secs = (ms: number) => Math.round(ms / 100) / 10;

export async function main(argv: string[]): Promise<void> {
  const options = parse(argv);
  const say = (line: string) => process.stdout.write(line + "\n");
  const { dataDir, url, emulator, platform, taskBundle, close } = await startBenchPlatform({ emulatorArgs: [] });
  try {
    const pool = new Pool({ connectionString: url, max: 2 });
    await seedSampleEmployees(pool, {
      schema: platform.publishSchema,
      loaderRole: SAMPLE_LOADER_ROLE,
      count: options.messages,
      seed: 1,
      platRegions: ["US", "EU"],
    });

    const s = platform.stagingSchema;
    const count = async (sql: string) => (await pool.query<{ n: number }>(sql)).rows[0].n;
    const setFaults = async (spec: string) => {
      const answer = await fetch(`${new URL(emulator.urls.state).origin}/_emulator/faults`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ spec }),
      });
      if (!answer.ok) throw new Error(`the emulator refused the faults: ${await answer.text()}`);
    };
    const tuned = Object.entries(process.env).filter(([k]) => k.startsWith("HUB_EXPORT_"));
    say(
      `Outage benchmark: ${options.messages} messages (US and EU), hub faults '${options.faults}', ${options.deadRuns} run(s) against it, then one against the healed hub`,
    );
    say(
      `  task settings       ${tuned.length ? tuned.map(([k, v]) => `${k}=${v}`).join(" ") : "the defaults"}${process.env.BENCH_TASK_BUNDLE ? `; bundle ${process.env.BENCH_TASK_BUNDLE}` : ""}`,
    );
    for (let i = 1; i <= options.deadRuns + 1; i++) {
      const healed = i > options.deadRuns;
      // Replacing the faults restarts the emulator's counters: what follows is this run's.
      await setFaults(healed ? "none" : options.faults);
      const { stored: before } = await hubState(emulator.urls.state);
      const t = Date.now();
      const task = await runAndWatch(taskBundle, platform.args, new UserCpu(dataDir).start());
      const seconds = secs(Date.now() - t);
      const last = task.events.at(-1) ?? {};
      const { rows: history } = await pool.query<{
        event: string;
        detail: { reason?: string; openLinks?: Record<string, string> };
      }>(`SELECT event, detail FROM ${s}.HUB_EXPORT_RUN_HISTORY ORDER BY recorded_at DESC LIMIT 1`);
      const { stats, stored: after } = await hubState(emulator.urls.state);
      say(`Run ${i}: ${healed ? "the hub healed" : `hub faults '${options.faults}'`}`);
      say(
        `  ended after         ${seconds} s: exit ${task.code}, ${String(last.event)}${typeof last.status === "string" && last.status ? ` ${last.status}` : ""}`,
      );
      say(
        `  recorded            ${history[0] ? `${history[0].event}${history[0].detail.reason ? `: ${history[0].detail.reason}` : ""}` : "nothing"}`,
      );
      if (history[0]?.detail.openLinks)
        say(`  links left open     ${Object.keys(history[0].detail.openLinks).join(", ")}`);
      const seen = Object.entries(stats).filter(([, x]) => x.requests > 0);
      say(
        `  the hub saw         ${
          seen
            .map(
              ([e, x]) =>
                `${e} ${x.requests}${
                  Object.keys(x.regions ?? {}).length
                    ? ` (${Object.entries(x.regions)
                        .map(([r, n]) => `${r} ${n}`)
                        .join(", ")})`
                    : ""
                }`,
            )
            .join("; ") || "no request"
        }`,
      );
      say(
        `  messages stored     ${(["US", "EU"] as const).map((r) => `${r} ${after[r] - before[r]} new`).join(", ")}; in all ${after.US + after.EU} distinct`,
      );
      say(
        `  warehouse           queued ${await count(`SELECT count(*)::int AS n FROM ${s}.HUB_ACME_MESSAGES`)}, published ${await count(`SELECT count(*)::int AS n FROM ${s}.HUB_ACME_MESSAGES_STATUS WHERE status = 'PUBLISHED'`)}, failed ${await count(`SELECT count(*)::int AS n FROM ${s}.HUB_ACME_MESSAGES_STATUS WHERE status = 'FAILED'`)}, set aside ${await count(`SELECT count(*)::int AS n FROM ${s}.HUB_ACME_MESSAGES_STATUS WHERE status = 'SET_ASIDE'`)}`,
      );
      const links = (last.links ?? {}) as Record<string, { requests: number; errors: number }>;
      const breakers = (last.breakers ?? {}) as Record<string, { state: string; failures: number; deadlines: number }>;
      for (const name of [...new Set([...Object.keys(links), ...Object.keys(breakers)])].sort()) {
        const l = links[name];
        const b = breakers[name];
        say(
          `  link ${name.padEnd(14)} ${l ? `${l.requests} requests, ${l.errors} errors` : "-"}${b ? `; breaker ${b.state}, ${b.failures} failures, ${b.deadlines} deadlines` : ""}`,
        );
      }
    }
    await pool.end();
  } finally {
    await close();
  }
}

/** The emulator's fault counters, and the distinct messages its queues hold per region. */
async function hubState(stateUrl: string) {
  const state = (await (await fetch(stateUrl)).json()) as {
    faults: { stats: Record<string, FaultStats> };
    queues: Record<string, { destinations: Record<string, { distinct: number }> }>;
  };
  const distinct = (r: "US" | "EU") => state.queues[r]?.destinations[QUEUES[r].queueName]?.distinct ?? 0;
  return { stats: state.faults.stats, stored: { US: distinct("US"), EU: distinct("EU") } };
}
