/** The probe's answer: a table of endpoint, check, result, latency and verdict, or the same as JSON. */
import { redact } from "../../core/redact";
import type { CheckResult } from "./checks";
import { probePassed } from "./probe";

export interface ProbeReport {
  passed: boolean;
  checks: CheckResult[];
  counts: Record<string, number>;
}

/** The checks as shown: every text redacted (core/redact.ts), since results quote what servers answered. */
export function probeReport(found: CheckResult[]): ProbeReport {
  const checks = found.map((c) => ({
    ...c,
    endpoint: redact(c.endpoint),
    check: redact(c.check),
    result: redact(c.result),
  }));
  const counts: Record<string, number> = { ok: 0, warn: 0, FAIL: 0, skip: 0 };
  for (const c of checks) counts[c.verdict]++;
  return { passed: probePassed(checks), checks, counts };
}

export function formatProbeTable(report: ProbeReport): string {
  const rows = report.checks.map((c) => [
    c.endpoint,
    c.check,
    c.result,
    c.latencyMs === null ? "-" : `${c.latencyMs} ms`,
    c.verdict === "FAIL" && !c.required ? "FAIL (not required)" : c.verdict,
  ]);
  const head = ["ENDPOINT", "CHECK", "RESULT", "LATENCY", "VERDICT"];
  const widths = head.map((h, i) => Math.min(i === 2 ? 90 : 60, Math.max(h.length, ...rows.map((r) => r[i].length))));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join("  ")
      .trimEnd();
  const failedRequired = report.checks.filter((c) => c.required && c.verdict === "FAIL").length;
  return [
    line(head),
    ...rows.map(line),
    "",
    `${report.checks.length} checks: ${report.counts.ok} ok, ${report.counts.warn} warn, ${report.counts.FAIL} FAIL, ${report.counts.skip} skipped`,
    report.passed
      ? "probe passed: every required check is ok"
      : `probe FAILED: ${failedRequired} required check(s) did not pass`,
    "",
  ].join("\n");
}
