/** The stack's CloudWatch dashboard: the run metrics of core/metrics.ts, the schedule's dead letters, the alarms. Pure. */
import { ALL_REGIONS, METRICS, METRIC_DIMENSIONS, METRIC_NAMESPACE } from "../../core/metrics";

export interface DashboardInput {
  region: string;
  jobName: string;
  /** Hub regions with tenants: one line each in the message widgets. */
  hubRegions: readonly string[];
  deadLetterQueueName: string;
  alarmArns: readonly string[];
  logGroupName: string;
}

const DAY = 86_400;

export function dashboardBody(input: DashboardInput): string {
  const dims = (region: string) => [METRIC_DIMENSIONS.jobName, input.jobName, METRIC_DIMENSIONS.region, region];
  const metric = (name: string, region: string, label: string, stat = "Sum") => [
    METRIC_NAMESPACE,
    name,
    ...dims(region),
    { label, stat, period: DAY },
  ];
  const perRegion = (name: string) => input.hubRegions.map((r) => metric(name, r, `${name} ${r}`));
  const widget = (x: number, y: number, title: string, metrics: unknown[], extra: Record<string, unknown> = {}) => ({
    type: "metric",
    x,
    y,
    width: 12,
    height: 6,
    properties: { title, region: input.region, view: "timeSeries", stacked: false, period: DAY, metrics, ...extra },
  });
  const widgets = [
    widget(
      0,
      0,
      "Runs per day, by outcome",
      [
        metric(METRICS.completed, ALL_REGIONS, "ExecutionCompleted"),
        metric(METRICS.executionFailed, ALL_REGIONS, "ExecutionFailed"),
        metric(METRICS.stopped, ALL_REGIONS, "Stopped"),
        metric(METRICS.refused, ALL_REGIONS, "Refused"),
        metric(METRICS.linksOpen, ALL_REGIONS, "hub links open (a dead hub)"),
      ],
      { view: "bar" },
    ),
    widget(12, 0, "Run duration (seconds)", [
      metric(METRICS.duration, ALL_REGIONS, "longest run", "Maximum"),
      metric(METRICS.duration, ALL_REGIONS, "average run", "Average"),
    ]),
    widget(0, 6, "Messages published per day, by hub region", perRegion(METRICS.published)),
    widget(12, 6, "Messages failed per day by hub region, held back and set aside", [
      ...perRegion(METRICS.failed),
      metric(METRICS.heldBack, ALL_REGIONS, "held back (all regions)"),
      metric(METRICS.setAside, ALL_REGIONS, "set aside (all regions)"),
    ]),
    widget(0, 12, "ERS entities per day, by hub region", perRegion(METRICS.ersEntities)),
    widget(
      12,
      12,
      "Schedule: invocations not delivered (dead-letter queue)",
      [
        [
          "AWS/SQS",
          "ApproximateNumberOfMessagesVisible",
          "QueueName",
          input.deadLetterQueueName,
          { stat: "Maximum", period: 300 },
        ],
      ],
      { period: 300 },
    ),
    {
      type: "alarm",
      x: 0,
      y: 18,
      width: 12,
      height: 4,
      properties: { title: "Alarms", alarms: [...input.alarmArns].sort() },
    },
    {
      type: "log",
      x: 12,
      y: 18,
      width: 12,
      height: 8,
      properties: {
        title: "Latest runs (the task's log)",
        region: input.region,
        view: "table",
        query: `SOURCE '${input.logGroupName}' | fields @timestamp, event, transactionId, status, extracted, published, failed, seconds, reason | filter event in ["run.done", "run.stopped", "run.refused"] | sort @timestamp desc | limit 20`,
      },
    },
  ];
  return JSON.stringify({ widgets });
}
