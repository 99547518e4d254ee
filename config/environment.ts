/**
 * Procedure step 4, checked: a stack's values belong to its environment (hubExport:environment). Each mismatch is an
 * issue with its key path: a warning from `hub-export validate`, an error under `--strict` (what CI runs).
 *
 * Names are compared by tokens: the pieces of a name split at `_ - .` (and host names at their dots), case-insensitive.
 */
import type { StackConfig } from "./schema";
import { hubUrls, type ConfigIssue } from "./validate";
import { sortRegions } from "../core/regions";

/** Environment labels a platform uses, with their spellings; a value naming another environment is a mismatch. */
export const ENVIRONMENT_ALIASES: Record<string, string[]> = {
  DEV: ["dev", "develop", "development"],
  TEST: ["test", "tst"],
  QA: ["qa"],
  UAT: ["uat"],
  STAGE: ["stage", "stg", "staging"],
  PROD: ["prod", "prd", "production"],
};

function tokens(value: string): string[] {
  return value
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/** The spellings of an environment label (itself when it is not a known one). */
function spellings(label: string): string[] {
  return ENVIRONMENT_ALIASES[label.toUpperCase()] ?? [label.toLowerCase()];
}

/** Known environments other than `label` named by `value`'s tokens. */
function otherEnvironments(value: string, label: string): string[] {
  const own = new Set(spellings(label));
  const found = new Set<string>();
  for (const token of tokens(value)) {
    if (own.has(token)) continue;
    for (const [env, names] of Object.entries(ENVIRONMENT_ALIASES)) if (names.includes(token)) found.add(env);
  }
  return [...found];
}

function names(value: string, label: string): boolean {
  const own = new Set(spellings(label));
  return tokens(value).some((t) => own.has(t));
}

export function environmentIssues(config: StackConfig): ConfigIssue[] {
  const env = config.environment;
  const issues: ConfigIssue[] = [];
  const add = (path: (string | number)[], message: string) => issues.push({ path, message });
  const label = spellings(env)[0].toUpperCase();
  const queueRegions = sortRegions(Object.keys(config.queues) as never);

  // The job name carries the environment suffix (HRSYS_EMPL_HUB_ACME_202611_QA).
  const last = tokens(config.jobName).at(-1) ?? "";
  if (!spellings(env).includes(last))
    add(
      ["jobName"],
      `'${config.jobName}' does not end in the environment suffix _${label} (hubExport:environment is ${env})`,
    );

  // Connection names are consistent: each names this environment and no other.
  const connections: { path: (string | number)[]; name: string }[] = [
    { path: ["bucket", "connectionName"], name: config.bucket.connectionName },
    { path: ["database", "connectionName"], name: config.database.connectionName },
    ...queueRegions.map((r) => ({
      path: ["queues", r, "connectionName"],
      name: config.queues[r]!.connectionName,
    })),
  ];
  for (const c of connections) {
    const others = otherEnvironments(c.name, env);
    if (others.length) add(c.path, `'${c.name}' names environment ${others.join(", ")}, not ${env}`);
    else if (!names(c.name, env))
      add(
        c.path,
        `'${c.name}' does not name environment ${env}, unlike a connection name of this stack should (e.g. a _${label} suffix)`,
      );
  }

  // Hub environment names match the stack's environment.
  const envNames: { path: (string | number)[]; name: string }[] = [];
  if (config.hub.default?.environmentName)
    envNames.push({ path: ["hub", "default", "environmentName"], name: config.hub.default.environmentName });
  for (const r of sortRegions(Object.keys(config.hub.regions) as never)) {
    const name = config.hub.regions[r]?.environmentName;
    if (name) envNames.push({ path: ["hub", "regions", r, "environmentName"], name });
  }
  for (const e of envNames) {
    const others = otherEnvironments(e.name, env);
    if (others.length) add(e.path, `hub environment '${e.name}' is a ${others.join(", ")} environment, not ${env}`);
    else if (!names(e.name, env)) add(e.path, `hub environment '${e.name}' does not name environment ${env}`);
  }

  // URLs never point at another environment's hosts (a QA stack at prod URLs, or the reverse).
  const urls = [
    ...hubUrls(config),
    ...queueRegions.map((r) => ({
      path: ["queues", r, "baseUrl"],
      url: config.queues[r]!.baseUrl,
    })),
  ];
  for (const u of urls) {
    const others = otherEnvironments(new URL(u.url).hostname, env);
    if (others.length) add(u.path, `${u.url} points at a ${others.join(", ")} host, but this stack is ${env}`);
  }
  // The task's login role is this stack's own (it creates, grants and on removal drops it): named after the client, so
  // that two clients' stacks in one environment never manage, and drop, the same role.
  const role = config.database.task.username;
  if (!`_${tokens(role).join("_")}_`.includes(`_${tokens(config.clientName).join("_")}_`)) {
    add(
      ["database", "task", "username"],
      `'${role}' does not name client ${config.clientName}: each client's stack manages its own login role, and two stacks of one environment naming the same role would share it (removing one drops it); e.g. hub_export_${config.clientName.toLowerCase()}_${label.toLowerCase()}`,
    );
  }
  // The platform environment's bucket (adopted) holds the shared scripts folder: its files must be encrypted with a key
  // every hub pipeline of the environment may use, not with a key this stack creates for itself.
  if (!config.bucket.create && !config.bucket.kmsKeyArn) {
    add(
      ["bucket", "kmsKeyArn"],
      "the bucket is adopted (the platform environment's): set the environment's shared KMS key, or the shared scripts folder /Tools/hub_python_scripts is encrypted with a key this stack creates, which the environment's other pipelines cannot decrypt",
    );
  }
  return issues;
}
