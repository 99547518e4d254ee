/**
 * Physical names of the cloud resources a stack creates. Names are derived from the client and the environment so
 * that two stacks never collide in one account, and are shortened with a hash where a service limits their length.
 */
import crypto from "node:crypto";
import { PROJECT_NAME, type StackConfig } from "../config/schema";

/** `acme-qa`: lower case, letters, digits and single hyphens. */
export function stackSlug(config: Pick<StackConfig, "clientName" | "environment">): string {
  return `${config.clientName}-${config.environment}`
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
}

/**
 * `hub-export-acme-qa[-suffix]`, at most `max` characters: a longer name keeps its start and ends in 8 hex digits of
 * its sha256, so it stays unique and stable.
 */
export function physicalName(config: Pick<StackConfig, "clientName" | "environment">, suffix = "", max = 64): string {
  const name = [PROJECT_NAME, stackSlug(config), suffix].filter(Boolean).join("-");
  if (name.length <= max) return name;
  const hash = crypto.createHash("sha256").update(name).digest("hex").slice(0, 8);
  return `${name.slice(0, max - 9).replace(/-+$/, "")}-${hash}`;
}

/** The export task's names: its cluster and task family, its log group, its roles. */
export function taskNames(config: Pick<StackConfig, "clientName" | "environment">) {
  const name = physicalName(config, "", 200);
  return {
    name,
    logGroupName: `/ecs/${name}`,
    roles: { task: physicalName(config, "task"), execution: physicalName(config, "execution") },
  };
}

/**
 * The log bucket a stack creates for its bucket's server access logs: `<bucket>-access-logs`, or, where that passes
 * S3's 63 characters, the bucket's name cut short and 8 hex digits of its sha256 (unique and stable).
 */
export function accessLogBucketName(bucketName: string): string {
  const name = `${bucketName}-access-logs`;
  if (name.length <= 63) return name;
  const hash = crypto.createHash("sha256").update(bucketName).digest("hex").slice(0, 8);
  return `${bucketName.slice(0, 63 - "-logs-".length - 8).replace(/[.-]+$/, "")}-logs-${hash}`;
}
