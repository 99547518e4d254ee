/**
 * The EventBridge rules that tell the alerts topic when a run of the export task did not complete: one rule per exit
 * meaning, because an input transformer cannot branch, so each rule's message can say plainly what happened. Pure:
 * patterns and messages from resolved names.
 */
import { ECS_STOP_CODES, EXIT, TASK_EXIT_MEANINGS } from "../../core/exitCodes";
import { CONTAINER_NAME, LOG_STREAM_PREFIX } from "../task/exportTask";

export interface TaskStopRuleInput {
  /** The Pulumi stack, for the commands the message suggests. */
  stack: string;
  jobName: string;
  environment: string;
  clusterArn: string;
  /** The task definition's ARN without revision: every revision of the family is watched. */
  taskDefinitionFamilyArn: string;
  logGroupName: string;
  region: string;
}

export interface TaskStopRule {
  /** Short key: part of the rule's name. */
  key: string;
  description: string;
  eventPattern: Record<string, unknown>;
  inputTransformer: { inputPaths: Record<string, string>; inputTemplate: string };
}

const INPUT_PATHS = {
  taskArn: "$.detail.taskArn",
  exitCode: "$.detail.containers[0].exitCode",
  stopCode: "$.detail.stopCode",
  stoppedReason: "$.detail.stoppedReason",
  stoppedAt: "$.detail.stoppedAt",
  startedBy: "$.detail.startedBy",
};

function pattern(input: TaskStopRuleInput, detail: Record<string, unknown>): Record<string, unknown> {
  return {
    source: ["aws.ecs"],
    "detail-type": ["ECS Task State Change"],
    detail: {
      clusterArn: [input.clusterArn],
      taskDefinitionArn: [{ prefix: `${input.taskDefinitionFamilyArn}:` }],
      lastStatus: ["STOPPED"],
      ...detail,
    },
  };
}

/** Placeholders EventBridge fills in: only these may appear in angle brackets. */
export const MESSAGE_PLACEHOLDERS = Object.keys(INPUT_PATHS);

/** The message: which job, what the exit means, where the logs are, what to run next. A JSON string for SNS. */
function transformer(input: TaskStopRuleInput, what: string): TaskStopRule["inputTransformer"] {
  const text = [
    `HRSYS export job ${input.jobName} (${input.environment}): ${what}`,
    `Task <taskArn> (started by <startedBy>) stopped at <stoppedAt>: <stopCode>, <stoppedReason>.`,
    `Logs: CloudWatch Logs group ${input.logGroupName} (${input.region}), stream ${LOG_STREAM_PREFIX}/${CONTAINER_NAME}/TASK_ID, TASK_ID being the last part of the task ARN; ` +
      `or: aws logs tail ${input.logGroupName} --since 1d --log-stream-name-prefix ${LOG_STREAM_PREFIX}/${CONTAINER_NAME}/`,
    `Runs of the job: npx hub-export status --stack ${input.stack} --job-name ${input.jobName} --database-url URL`,
  ].join("\n");
  return { inputPaths: INPUT_PATHS, inputTemplate: JSON.stringify(text) };
}

export function taskStopRules(input: TaskStopRuleInput): TaskStopRule[] {
  const container = (exitCode: unknown[]) => ({ containers: { name: [CONTAINER_NAME], exitCode } });
  const exited = (code: number) => `the task exited with code ${code}: ${TASK_EXIT_MEANINGS[code]}.`;
  // A stop by ECS is SIGTERM: the task records it and exits 1, or, still starting, dies of it (143). Stopped, not failed.
  const stopped = [EXIT.failed, EXIT.sigterm];
  const known = [EXIT.ok, EXIT.executionFailed, ...stopped];
  return [
    {
      key: "execution-failed",
      description: `Export job ${input.jobName}: a run ended ExecutionFailed (exit ${EXIT.executionFailed})`,
      eventPattern: pattern(input, container([EXIT.executionFailed])),
      inputTransformer: transformer(input, exited(EXIT.executionFailed)),
    },
    {
      key: "stopped",
      description: `Export job ${input.jobName}: a run was refused or stopped (exit ${EXIT.failed}, or ${EXIT.sigterm} when ECS stopped it while starting)`,
      eventPattern: pattern(input, container(stopped)),
      inputTransformer: transformer(
        input,
        `${exited(EXIT.failed)} The log's run.refused or run.stopped line says which, and why. ` +
          `A stop code ${ECS_STOP_CODES.join(", ")} means ECS stopped the task (SIGTERM): the run recorded a Stopped row with reason SIGTERM (or, with exit ${EXIT.sigterm}, had not begun), and the next run resumes it.`,
      ),
    },
    {
      key: "other-exit",
      description: `Export job ${input.jobName}: a run exited with another non-zero code (usage ${EXIT.usage}, internal ${EXIT.internal}, killed)`,
      eventPattern: pattern(input, container([{ "anything-but": known }])),
      inputTransformer: transformer(
        input,
        `the task exited with code <exitCode>: ${EXIT.usage} = ${TASK_EXIT_MEANINGS[EXIT.usage]}; ${EXIT.internal} = ${TASK_EXIT_MEANINGS[EXIT.internal]}; 137 = killed (out of memory, or not stopped within the stop timeout).`,
      ),
    },
    {
      key: "not-run",
      description: `Export job ${input.jobName}: a task stopped before its container ran to an exit code`,
      eventPattern: pattern(input, {
        stopCode: [{ "anything-but": "EssentialContainerExited" }],
        containers: { exitCode: [{ exists: false }] },
      }),
      inputTransformer: transformer(
        input,
        "the task stopped without an exit code (it failed to start, or ECS stopped it): nothing was exported by it; the next run does the work.",
      ),
    },
  ];
}
