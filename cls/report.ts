/**
 * Unknown codes found by the check, per code field: how many distinct codes, how often they occur, in how many
 * employees, with the most frequent as examples. Added up over a run's batches; the same shape goes to the log, the
 * run history (`detail.unknownCodes`) and `hub-export status` / `cls check`.
 */

import { CLS_TABLE, fieldName } from "../core/clsTable";

const TABLE_ORDER = CLS_TABLE.map(fieldName);

export interface UnknownCodeRow {
  field: string;
  code: string;
  occurrences: number;
  employees: number;
}

export interface FieldReport {
  /** Distinct unknown codes. */
  codes: number;
  occurrences: number;
  employees: number;
  /** The most frequent unknown codes, at most EXAMPLES. */
  examples: { code: string; occurrences: number }[];
}

export type UnknownCodesReport = Record<string, FieldReport>;

const EXAMPLES = 5;
/** Distinct codes remembered per field: beyond that only the counts grow. */
const MAX_TRACKED = 1000;

export class UnknownCodes {
  private readonly fields = new Map<
    string,
    { codes: Map<string, number>; extraCodes: number; occurrences: number; employees: number }
  >();

  add(rows: readonly UnknownCodeRow[]): void {
    for (const r of rows) {
      let f = this.fields.get(r.field);
      if (!f) this.fields.set(r.field, (f = { codes: new Map(), extraCodes: 0, occurrences: 0, employees: 0 }));
      f.occurrences += r.occurrences;
      f.employees += r.employees;
      const seen = f.codes.get(r.code);
      if (seen !== undefined) f.codes.set(r.code, seen + r.occurrences);
      else if (f.codes.size < MAX_TRACKED) f.codes.set(r.code, r.occurrences);
      else f.extraCodes++;
    }
  }

  get empty(): boolean {
    return this.fields.size === 0;
  }

  report(): UnknownCodesReport {
    const out: UnknownCodesReport = {};
    // In the CLS table's order; fields that are not in it (none expected) last.
    const order = (f: string) => {
      const i = TABLE_ORDER.indexOf(f);
      return i < 0 ? TABLE_ORDER.length : i;
    };
    for (const field of [...this.fields.keys()].sort((a, b) => order(a) - order(b) || (a < b ? -1 : 1))) {
      const f = this.fields.get(field)!;
      const examples = [...f.codes]
        .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
        .slice(0, EXAMPLES)
        .map(([code, occurrences]) => ({ code, occurrences }));
      out[field] = { codes: f.codes.size + f.extraCodes, occurrences: f.occurrences, employees: f.employees, examples };
    }
    return out;
  }
}

/** One line per field: `User.RoleCode: 2 unknown codes in 14 employees (17 times), e.g. SALES_REP_X (12), NEW_ROLE (5)`. */
export function reportLines(report: UnknownCodesReport): string[] {
  return Object.entries(report).map(([field, f]) => {
    const examples = f.examples.map((e) => `${e.code} (${e.occurrences})`).join(", ");
    return `${field}: ${f.codes} unknown code${f.codes === 1 ? "" : "s"} in ${f.employees} employee${f.employees === 1 ? "" : "s"} (${f.occurrences} time${f.occurrences === 1 ? "" : "s"}), e.g. ${examples}`;
  });
}
