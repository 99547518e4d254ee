import { z } from "zod";

/**
 * The values the specification lists for the hub's cfg_routing_rule fields ("Routing rule record", "allowed values
 * used" by this data flow): the values of the default rule set, and the ones `hub-export validate` knows. They are an
 * example, not a closed set: "for other data flows the body is adjusted to the client's needs", so any code of the
 * right shape is accepted, and one outside these lists gets a warning (unknownRoutingValues), not a refusal.
 */
export const ROUTING_RULE_VALUES = {
  dataDomainCode: ["EMPL"],
  isDataMastered: [0, 1],
  systemRoleCodeSource: ["OM", "ALL", "RDPR", "MDM"],
  systemRoleCodeTarget: ["MKT", "CRM", "OM", "ALL", "HUBOPT", "MDM"],
  status: [-1, 1],
} as const;

/** A code of the hub's: uppercase letters, digits and _, starting with a letter, as every code the specification shows. */
const code = z
  .string()
  .regex(
    /^[A-Z][A-Z0-9_]{0,31}$/,
    "must be a code: an uppercase letter, then uppercase letters, digits or _ (at most 32)",
  );
/** The specification types the integer fields as integer: a 32-bit one. */
const integer = z.int32({ error: "must be an integer" });

/** One routing rule; all five fields are sent in every object. */
export const routingRuleSchema = z.strictObject({
  dataDomainCode: code,
  isDataMastered: integer,
  systemRoleCodeSource: code,
  systemRoleCodeTarget: code,
  status: integer,
});
export type RoutingRule = z.infer<typeof routingRuleSchema>;

/** The fields of `rule` whose value is not among the specification's (ROUTING_RULE_VALUES), with the values it lists. */
export function unknownRoutingValues(
  rule: RoutingRule,
): { field: keyof RoutingRule; value: string | number; known: readonly (string | number)[] }[] {
  return (Object.keys(ROUTING_RULE_VALUES) as (keyof RoutingRule)[]).flatMap((field) => {
    const known: readonly (string | number)[] = ROUTING_RULE_VALUES[field];
    return known.includes(rule[field]) ? [] : [{ field, value: rule[field], known }];
  });
}

type Row = [
  RoutingRule["isDataMastered"],
  RoutingRule["systemRoleCodeSource"],
  RoutingRule["systemRoleCodeTarget"],
  RoutingRule["status"],
];

/** The specification's 8-rule set for a client that does not use OM and uses the HR system for employee data. */
const DEFAULT_ROWS: readonly Row[] = [
  [0, "OM", "MKT", -1],
  [0, "OM", "CRM", -1],
  [0, "ALL", "OM", -1],
  [0, "RDPR", "ALL", 1],
  [0, "RDPR", "HUBOPT", -1],
  [1, "RDPR", "MDM", 1],
  [1, "MDM", "ALL", 1],
  [1, "MDM", "HUBOPT", -1],
];

export function defaultRoutingRules(): RoutingRule[] {
  return DEFAULT_ROWS.map(([isDataMastered, systemRoleCodeSource, systemRoleCodeTarget, status]) => ({
    dataDomainCode: "EMPL",
    isDataMastered,
    systemRoleCodeSource,
    systemRoleCodeTarget,
    status,
  }));
}

/** A canonical text of a rule set: field order fixed, so equal sets hash and compare equal. */
export function canonicalRuleSet(rules: readonly RoutingRule[]): string {
  return JSON.stringify(
    rules.map((r) => ({
      dataDomainCode: r.dataDomainCode,
      isDataMastered: r.isDataMastered,
      systemRoleCodeSource: r.systemRoleCodeSource,
      systemRoleCodeTarget: r.systemRoleCodeTarget,
      status: r.status,
    })),
  );
}

/** sha256 of the canonical rule set: equal sets are not posted again. Serialized with providers/routingRules.ts. */
export function routingRulesHash(rules: readonly RoutingRule[]): string {
  const crypto = require("node:crypto") as typeof import("node:crypto");
  return crypto.createHash("sha256").update(canonicalRuleSet(rules), "utf8").digest("hex");
}

/** The rule set posted for a tenant: its custom list, or the specification's 8-rule set. */
export function routingRulesFor(tenant: { routingRules?: RoutingRule[] }): RoutingRule[] {
  return tenant.routingRules ?? defaultRoutingRules();
}
