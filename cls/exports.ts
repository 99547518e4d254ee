/**
 * Reading one export of a business object, with no I/O: the HR system's "export to spreadsheet" of its Integration
 * IDs, as rows of cells. Column names vary between tenants and releases, so the code (id) and description columns are
 * detected by name unless the stack config maps them; a file where that is not clear-cut is refused, naming the file
 * and the columns it has. Blank and duplicate codes are reported one line each and left out.
 */
import { BUSINESS_OBJECTS, type BusinessObject, type CodeValue } from "../core/clsTable";

/** One row of a file: its 1-based row (line) number and its cells. */
export interface SheetRow {
  line: number;
  cells: string[];
}

/** Column names (or file name) given in `hubExport:cls.businessObjects.<name>`. */
export interface ExportMapping {
  file?: string;
  code?: string;
  description?: string;
}

export interface CodeList {
  businessObject: BusinessObject;
  file: string;
  codeColumn: string;
  descriptionColumn: string;
  values: CodeValue[];
  /** Blank and duplicate codes: one line each, already naming the file and row. */
  problems: string[];
  /** Set when the description column was not recognised by name: it is the only column besides the code. */
  descriptionNote?: string;
}

/** A file we cannot use as it is: the message names the file and says what to do. */
export class ExportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ExportError";
  }
}

/** Lower case, letters and digits only: "Job Profile ID" → "jobprofileid". */
export function normalize(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9]/g, "");
}

/** The business object a file is the export of, from its name ("Job Profile export.xlsx"); undefined when none or several. */
export function businessObjectOfFile(fileName: string): BusinessObject | undefined {
  const name = normalize(fileName.replace(/\.[^.]+$/, ""));
  const found = BUSINESS_OBJECTS.filter((b) => name.includes(normalize(b)));
  return found.length === 1 ? found[0] : undefined;
}

const CODE_NAMES = ["integrationid", "referenceid", "externalid", "code", "id"];
const DESCRIPTION_NAMES = ["description", "name", "descriptor", "label", "instance"];

/** Header names that can be the column, best first: [exact names, names that end like one]. */
function candidates(
  headers: string[],
  businessObject: BusinessObject,
  kind: "code" | "description",
  exclude?: number,
): number[][] {
  const bo = normalize(businessObject);
  const exact =
    kind === "code"
      ? [...CODE_NAMES, ...CODE_NAMES.map((n) => bo + n)]
      : [...DESCRIPTION_NAMES, ...DESCRIPTION_NAMES.map((n) => bo + n), bo];
  const ending = kind === "code" ? /(id|code)$/ : /(description|name|descriptor|label)$/;
  const tiers: number[][] = [[], []];
  headers.forEach((h, i) => {
    if (i === exclude || !h.trim()) return;
    const n = normalize(h);
    if (exact.includes(n)) tiers[0].push(i);
    else if (ending.test(n)) tiers[1].push(i);
  });
  return tiers;
}

function quoteList(headers: string[]): string {
  return headers
    .filter((h) => h.trim())
    .map((h) => `'${h}'`)
    .join(", ");
}

function pickColumn(
  file: string,
  headers: string[],
  businessObject: BusinessObject,
  kind: "code" | "description",
  mapped: string | undefined,
  exclude?: number,
): number {
  const key = `hubExport:cls.businessObjects["${businessObject}"].${kind}`;
  const seen = `columns seen: ${quoteList(headers)}`;
  if (mapped !== undefined) {
    const matches = headers.flatMap((h, i) => (h.trim().toLowerCase() === mapped.trim().toLowerCase() ? [i] : []));
    if (matches.length === 1) return matches[0];
    if (matches.length === 0) throw new ExportError(`${file}: has no column '${mapped}' (${key}); ${seen}`);
    throw new ExportError(`${file}: column '${mapped}' (${key}) appears ${matches.length} times; ${seen}`);
  }
  for (const tier of candidates(headers, businessObject, kind, exclude)) {
    if (tier.length === 1) return tier[0];
    if (tier.length > 1) {
      throw new ExportError(
        `${file}: ambiguous ${kind} column: ${quoteList(tier.map((i) => headers[i]))} could each be it; ${seen}; name the column in ${key}`,
      );
    }
  }
  throw new ExportError(`${file}: no ${kind} column found; ${seen}; name the column in ${key}`);
}

/** The code list of one export. Throws ExportError when the file cannot be read as one. */
export function readCodeList(
  file: string,
  businessObject: BusinessObject,
  rows: SheetRow[],
  mapping: ExportMapping = {},
): CodeList {
  // The header is the first row with two cells or more: the HR system may put a title row above it.
  const filled = (r: SheetRow) => r.cells.filter((c) => c.trim() !== "").length;
  const headerAt = rows.findIndex((r) => filled(r) >= 2);
  if (headerAt < 0) {
    const only = rows.find((r) => filled(r) > 0);
    throw new ExportError(
      `${file}: ${only ? `has no header row with a code and a description column (only one column seen: '${only.cells.find((c) => c.trim())!.trim()}')` : "is empty: expected a header row with a code and a description column"}`,
    );
  }
  const headers = rows[headerAt].cells.map((c) => c.trim());
  const codeAt = pickColumn(file, headers, businessObject, "code", mapping.code);
  // Beside the code, a single column is the description whatever its name (a business object's own word, say).
  const others = headers.flatMap((h, i) => (i !== codeAt && h !== "" ? [i] : []));
  const onlyOther = mapping.description === undefined && others.length === 1 ? others[0] : undefined;
  const named = candidates(headers, businessObject, "description", codeAt).some((tier) => tier.length > 0);
  const descriptionAt =
    onlyOther ?? pickColumn(file, headers, businessObject, "description", mapping.description, codeAt);
  const descriptionNote =
    onlyOther !== undefined && !named
      ? `${file}: description column '${headers[onlyOther]}', the only column besides the code '${headers[codeAt]}'`
      : undefined;
  if (codeAt === descriptionAt)
    throw new ExportError(
      `${file}: the code and description columns are the same column '${headers[codeAt]}'; columns seen: ${quoteList(headers)}`,
    );

  const values: CodeValue[] = [];
  const problems: string[] = [];
  const firstLine = new Map<string, number>();
  for (const row of rows.slice(headerAt + 1)) {
    if (row.cells.every((c) => c.trim() === "")) continue;
    const code = (row.cells[codeAt] ?? "").trim();
    const description = (row.cells[descriptionAt] ?? "").trim();
    if (code === "") {
      problems.push(
        `${file} row ${row.line}: blank code in column '${headers[codeAt]}'${description ? ` (description '${description}')` : ""}: row left out`,
      );
      continue;
    }
    const first = firstLine.get(code);
    if (first !== undefined) {
      problems.push(`${file} row ${row.line}: duplicate code '${code}' (first at row ${first}): row left out`);
      continue;
    }
    firstLine.set(code, row.line);
    values.push({ code, description });
  }
  if (values.length === 0)
    throw new ExportError(`${file}: has no codes below its header row (column '${headers[codeAt]}')`);
  return {
    businessObject,
    file,
    codeColumn: headers[codeAt],
    descriptionColumn: headers[descriptionAt],
    values,
    problems,
    ...(descriptionNote ? { descriptionNote } : {}),
  };
}
