/**
 * The run's CloudWatch metrics as embedded metric format (EMF) records, log lines CloudWatch Logs turns into metrics
 * (dimensions JobName and Region): one per hub region, and one with Region = ALL carrying the run's totals, duration
 * and outcome. The task writes them, the monitoring component's alarms and dashboard read them: the names live here.
 */

export const METRIC_NAMESPACE = "HubExport";

export const METRIC_DIMENSIONS = { jobName: "JobName", region: "Region" } as const;

/** Region dimension value of the run-level record. */
export const ALL_REGIONS = "ALL";

export const METRICS = {
  published: "MessagesPublished",
  failed: "MessagesFailed",
  heldBack: "MessagesHeldBack",
  /** Messages set aside by the run (refused for good by set_aside_after_runs runs): an alarm-worthy count. */
  setAside: "MessagesSetAside",
  ersEntities: "ErsEntities",
  duration: "RunDurationSeconds",
  completed: "RunsCompleted",
  executionFailed: "RunsExecutionFailed",
  stopped: "RunsStopped",
  refused: "RunsRefused",
  /** Hub links (an API in a hub region) open at the run's end: their work waits for the next run. */
  linksOpen: "HubLinksOpen",
} as const;

/** How a run ended, in the run history's words. */
export type RunOutcome = "ExecutionCompleted" | "ExecutionFailed" | "Stopped" | "Refused";

const OUTCOME_METRIC: Record<RunOutcome, string> = {
  ExecutionCompleted: METRICS.completed,
  ExecutionFailed: METRICS.executionFailed,
  Stopped: METRICS.stopped,
  Refused: METRICS.refused,
};

export interface MessageCounts {
  published: number;
  failed: number;
  heldBack: number;
  setAside: number;
  ersEntities: number;
}

export interface RunMetricsInput {
  jobName: string;
  outcome: RunOutcome;
  seconds: number;
  /** Absent for a stopped or refused run: its counts are not final, so none are reported. */
  regions?: Record<string, MessageCounts>;
  /** Run totals known better than the regions' sum (held back is counted per run, not per tenant). */
  totals?: Partial<MessageCounts>;
  /** Hub links open at the run's end (`queue.EU`). */
  openLinks?: string[];
  /** Milliseconds since the epoch. */
  timestamp: number;
}

export interface EmfMetricDirective {
  Namespace: string;
  Dimensions: string[][];
  Metrics: { Name: string; Unit: "Count" | "Seconds" }[];
}

/** One EMF record: `_aws` metadata, then dimension values, metric values and properties at the top level. */
export interface EmfRecord {
  _aws: { Timestamp: number; CloudWatchMetrics: EmfMetricDirective[] };
  [key: string]: unknown;
}

const COUNTS: (keyof MessageCounts)[] = ["published", "failed", "heldBack", "setAside", "ersEntities"];
/** Counted per run, not per region. */
const RUN_ONLY: (keyof MessageCounts)[] = ["heldBack", "setAside"];

function record(
  input: RunMetricsInput,
  region: string,
  values: Record<string, number>,
  properties: Record<string, unknown> = {},
): EmfRecord {
  return {
    _aws: {
      Timestamp: input.timestamp,
      CloudWatchMetrics: [
        {
          Namespace: METRIC_NAMESPACE,
          Dimensions: [[METRIC_DIMENSIONS.jobName, METRIC_DIMENSIONS.region]],
          Metrics: Object.keys(values).map((Name) => ({ Name, Unit: Name === METRICS.duration ? "Seconds" : "Count" })),
        },
      ],
    },
    [METRIC_DIMENSIONS.jobName]: input.jobName,
    [METRIC_DIMENSIONS.region]: region,
    ...properties,
    ...values,
  };
}

/** The EMF records of one run: per hub region (when counts are final), then the run's own. */
export function runMetricRecords(input: RunMetricsInput): EmfRecord[] {
  const records: EmfRecord[] = [];
  const totals: MessageCounts = { published: 0, failed: 0, heldBack: 0, setAside: 0, ersEntities: 0 };
  for (const [region, counts] of Object.entries(input.regions ?? {}).sort(([a], [b]) => a.localeCompare(b))) {
    const values: Record<string, number> = {};
    for (const key of COUNTS) {
      totals[key] += counts[key];
      if (!RUN_ONLY.includes(key)) values[METRICS[key]] = counts[key];
    }
    records.push(record(input, region, values));
  }
  Object.assign(totals, input.totals ?? {});
  const values: Record<string, number> = {};
  if (input.regions) for (const key of COUNTS) values[METRICS[key]] = totals[key];
  values[METRICS.duration] = input.seconds;
  for (const [outcome, name] of Object.entries(OUTCOME_METRIC)) values[name] = outcome === input.outcome ? 1 : 0;
  const open = input.openLinks ?? [];
  if (open.length) values[METRICS.linksOpen] = open.length;
  records.push(
    record(input, ALL_REGIONS, values, { Outcome: input.outcome, ...(open.length ? { OpenLinks: open } : {}) }),
  );
  return records;
}

/** Whether a parsed log line is an EMF record (has `_aws.CloudWatchMetrics`). */
export function isEmfRecord(value: unknown): value is EmfRecord {
  const aws = (value as { _aws?: { CloudWatchMetrics?: unknown } } | null)?._aws;
  return Array.isArray(aws?.CloudWatchMetrics);
}

/** One line per metric value of a record, for people: `MessagesPublished{JobName=X,Region=US} = 12`. */
export function formatEmfRecord(r: EmfRecord): string[] {
  const lines: string[] = [];
  for (const directive of r._aws.CloudWatchMetrics) {
    const dims = directive.Dimensions[0] ?? [];
    const label = dims.map((d) => `${d}=${String(r[d])}`).join(",");
    for (const m of directive.Metrics)
      lines.push(`${m.Name}{${label}} = ${String(r[m.Name])}${m.Unit === "Seconds" ? " s" : ""}`);
  }
  return lines;
}
