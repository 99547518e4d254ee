/**
 * The pipeline parameters (stack config `parameters`, the rendered definition's `parameters`): their defaults and
 * their one schema, shared by config/schema.ts and core/definition.ts; and the text schemas the stack config reuses.
 */
import { z } from "zod";

/** The specification's defaults of the six environment-independent pipeline parameters. */
export const PARAMETER_DEFAULTS = {
  records_per_hub_message: 1,
  records_per_ers_request: 100,
  idl_date: "1901-01-01T00:00:00",
  system_code: "HRSYS",
  EmpTypeDefault: "Sales",
  EmpGenderDefault: "Not_Declared",
} as const;

/** The defaults of the export task's own parameters (task/README.md, "Change capture" and "Poison messages"). */
export const TASK_PARAMETER_DEFAULTS = {
  change_lag_seconds: 0,
  set_aside_after_runs: 3,
} as const;

/** ISO 8601 local date-time, no zone: 1901-01-01T00:00:00 (fraction allowed). */
const ISO_LOCAL_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,6})?$/;
export const isoLocalDateTime = z.string().refine((v) => {
  const m = ISO_LOCAL_DATE_TIME.exec(v);
  if (!m) return false;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number);
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  return (
    date.getUTCFullYear() === y &&
    date.getUTCMonth() === mo - 1 &&
    date.getUTCDate() === d &&
    h < 24 &&
    mi < 60 &&
    s < 60
  );
}, "must be an ISO 8601 date-time without zone, like 1901-01-01T00:00:00");

export const positiveInt = z.number().int("must be an integer").positive("must be a positive integer");

/**
 * Text as the Pulumi CLI writes it. `pulumi config set --path KEY 123456` stores an all-digit value as a YAML integer
 * (one with a leading zero stays a string, as the CLI keeps it), so every id-like key reads an integer back as its
 * digits. An integer too long to be exact in JavaScript is refused: its digits may already be lost.
 */
export function cliText<T extends z.ZodType<string>>(schema: T) {
  return z.preprocess(
    (value) => (typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? String(value) : value),
    schema,
  );
}
/** A string schema whose type error says how an integer the CLI wrote can be kept whole. */
export const string = () =>
  z.string({
    error: (issue) =>
      typeof issue.input === "number"
        ? "is a number, not text: write it in quotes in the stack file (`pulumi config set --path` stores digits as a number)"
        : undefined,
  });
/** Free text of 1 to `max` characters: what its column or its use holds (config/text.ts refuses control characters). */
export const text = (max: number) =>
  cliText(string().min(1, "must not be empty").max(max, `must be at most ${max} characters`));

export const parametersSchema = z.strictObject({
  records_per_hub_message: positiveInt.default(PARAMETER_DEFAULTS.records_per_hub_message),
  records_per_ers_request: positiveInt.default(PARAMETER_DEFAULTS.records_per_ers_request),
  idl_date: isoLocalDateTime.default(PARAMETER_DEFAULTS.idl_date),
  system_code: cliText(string().regex(/^[A-Z0-9_]{1,32}$/, "must be an uppercase system code")).default(
    PARAMETER_DEFAULTS.system_code,
  ),
  EmpTypeDefault: text(64).default(PARAMETER_DEFAULTS.EmpTypeDefault),
  EmpGenderDefault: text(64).default(PARAMETER_DEFAULTS.EmpGenderDefault),
  // The export task's own parameters (not the specification's), task/README.md: how far a loader's changed_at may lie
  // behind the moment its change commits, and how many runs retry a message the broker refuses for good.
  change_lag_seconds: z
    .number()
    .int("must be an integer")
    .min(0, "must be 0 or more")
    .max(7 * 24 * 3600, "must be at most a week (604800)")
    .default(TASK_PARAMETER_DEFAULTS.change_lag_seconds),
  set_aside_after_runs: positiveInt
    .max(100, "must be at most 100")
    .default(TASK_PARAMETER_DEFAULTS.set_aside_after_runs),
});
