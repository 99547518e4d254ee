/**
 * `hub-export cls build | check`: the CLS load sheet from the HR system's exports, and the unknown-code check on
 * demand. The work is in cls/.
 */
import fs from "node:fs";
import path from "node:path";
import { defineCommand } from "../command";
import { UsageError, UserError } from "../../core/errors";
import { HUB_CONFIGURATION_FILES, hubConfigurationFolder, schemaOnly } from "../../core/naming";
import { loadFromOptions, stackOptions } from "../stackOptions";
import { DATABASE_DETAILS, DATABASE_OPTIONS, databaseLine, openDatabase } from "../database";
import { buildFromFolder, readLoadSheetFile, writeLoadSheet } from "../../cls/files";
import { rowCounts, type LoadSheet } from "../../cls/loadSheet";
import { buildStackSheets, exportsFolder } from "../../config/clsSheets";
import { reportLines } from "../../cls/report";
import { checkDatabase } from "../../task/cls/databaseCheck";
import type { StackConfig } from "../../config/schema";

const json = { type: "boolean", description: "Print the result as one JSON object", example: "--json" } as const;

const buildAction = defineCommand({
  summary: "Build the CLS load sheet from the HR system's exports (one CSV or XLSX per business object)",
  options: {
    ...stackOptions,
    from: {
      type: "string",
      value: "DIR",
      description: "The folder of the HR system's exports (one CSV or XLSX per business object)",
      defaultText: "the stack's hubExport:cls.exports, with --stack/--file",
      example: "--from ./exports",
    },
    out: {
      type: "string",
      value: "FILE",
      multiple: true,
      required: true,
      description: "The load sheet to write, .csv or .xlsx (give it twice for both)",
      example: "--out cls.xlsx",
    },
    strict: {
      type: "boolean",
      description: "Blank or duplicate codes fail (exit 1) instead of being reported and left out",
      example: "--strict",
    },
    json,
  },
  details: [
    "Each export's code column and description column are found by name; with --stack/--file, names come from its hubExport:cls.businessObjects. An export with one column besides the code uses that column as the description, and says so. Blank and duplicate codes are reported one line each.",
  ],
  examples: [
    {
      command: "hub-export cls build --from ./exports --out cls.csv --out cls.xlsx",
      does: "both sheets from a folder of exports",
    },
    {
      command: "hub-export cls build --stack qa --out cls.csv",
      does: "the sheet of the qa stack's exports, with its column names",
    },
  ],
  exitCodes: { 1: "a problem to fix, or (--strict) blank or duplicate codes" },
  async run(values, io) {
    const config = values.stack || values.file ? loadFromOptions(values) : undefined;
    const from = values.from ?? (config?.cls ? exportsFolder(config.cls) : undefined);
    if (!from) throw new UsageError("--from is required (or --stack with hubExport:cls.exports)");
    const outs = values.out ?? [];
    if (outs.length === 0) throw new UsageError("--out is required: a .csv or .xlsx file (give it twice for both)");
    for (const out of outs)
      if (!/\.(csv|xlsx)$/i.test(out)) throw new UsageError(`--out ${out}: must end in .csv or .xlsx`);
    const built = await buildFromFolder(from, { businessObjects: config?.cls?.businessObjects });
    for (const p of built.problems) io.stderr.write(`warning: ${p}\n`);
    if (values.strict && built.problems.length)
      throw new UserError(
        `${built.problems.length} blank or duplicate code(s) in the exports (--strict): nothing written`,
      );
    for (const out of outs) await writeLoadSheet(out, built.sheet);
    const summary = {
      from,
      out: outs,
      rows: built.sheet.rows.length,
      fields: rowCounts(built.sheet),
      exports: built.lists.map((l) => ({
        businessObject: l.businessObject,
        file: path.basename(l.file),
        codeColumn: l.codeColumn,
        descriptionColumn: l.descriptionColumn,
        codes: l.values.length,
        ...(l.descriptionNote ? { note: l.descriptionNote } : {}),
      })),
      problems: built.problems,
    };
    if (values.json) {
      io.stdout.write(JSON.stringify(summary, null, 2) + "\n");
      return 0;
    }
    const lines = [
      `CLS load sheet: ${summary.rows} rows for ${Object.keys(summary.fields).length} code fields, written to ${outs.join(" and ")}`,
    ];
    for (const e of summary.exports)
      lines.push(
        `  ${e.businessObject.padEnd(28)} ${String(e.codes).padStart(5)} codes  from ${e.file} (code '${e.codeColumn}', description '${e.descriptionColumn}')`,
      );
    for (const e of summary.exports) if (e.note) lines.push(`  note: ${e.note}`);
    if (built.problems.length) lines.push(`  ${built.problems.length} row(s) left out: see the warnings above`);
    io.stdout.write(lines.join("\n") + "\n");
    return 0;
  },
});

const checkAction = defineCommand({
  summary: "Check the codes of the client's employees and held-back messages against the CLS load sheet",
  options: {
    ...stackOptions,
    ...DATABASE_OPTIONS,
    sheet: {
      type: "string",
      value: "FILE",
      description: "The load sheet to compare with",
      defaultText:
        "the embedded default's sheet (with its database), else the one built from the stack's hubExport:cls.exports",
      example: "--sheet cls.csv",
    },
    json,
  },
  details: [
    "Compares the codes of the client's employees, and its held-back messages, with the CLS load sheet; exit 1 when unknown codes are found.",
    DATABASE_DETAILS,
  ],
  examples: [
    {
      command: "hub-export cls check",
      does: "unknown codes in the embedded default's data (.local/, npm start), against its sheet",
    },
    {
      command: "hub-export cls check --stack prod --sheet cls.csv",
      does: "the prod stack's warehouse against a sheet file (PGPASSWORD or ~/.pgpass holds the task login's password)",
    },
  ],
  exitCodes: { 1: "a problem to fix, or unknown codes found" },
  async run(values, io) {
    const config = loadFromOptions(values);
    const db = await openDatabase(values, config, "cls-check");
    try {
      const { sheet, source } = await sheetFor(values.sheet, config, db.local?.bucket);
      const result = await checkDatabase(
        db.client,
        {
          stagingSchema: schemaOnly(config.stagingSchema),
          publishSchema: schemaOnly(config.publishSchema),
          clientName: config.clientName,
          empTypeDefault: config.parameters.EmpTypeDefault,
          empGenderDefault: config.parameters.EmpGenderDefault,
        },
        sheet,
      );
      const unknown = Object.keys(result.fields).length > 0;
      if (values.json) {
        io.stdout.write(JSON.stringify({ database: db.name, sheet: source, ...result }, null, 2) + "\n");
        return unknown ? 1 : 0;
      }
      const lines = [
        databaseLine(db).trimEnd(),
        `CLS check of client ${result.clientName} (platform regions ${result.platRegions.join(", ") || "none"}): ${result.employees} employees against ${result.sheetRows} sheet rows (${source})`,
      ];
      if (!unknown) lines.push("  no unknown codes");
      for (const line of reportLines(result.fields)) lines.push(`  ${line}`);
      if (result.heldBack.messages) {
        lines.push(
          `  held back: ${result.heldBack.messages} message(s); ${result.heldBack.stillUnknown} still carry unknown codes, the next run releases the others`,
        );
      }
      io.stdout.write(lines.join("\n") + "\n");
      return unknown ? 1 : 0;
    } finally {
      await db.close();
    }
  },
});

export default defineCommand({
  summary: "CLS load sheets from the HR system's exports (build) and the unknown-code check on demand (check)",
  options: {},
  actions: { build: buildAction, check: checkAction },
  exitCodes: { 1: "a problem to fix, or (check) unknown codes found, or (build --strict) blank or duplicate codes" },
});

/** The sheet to check against, and where it came from. */
async function sheetFor(
  file: string | undefined,
  config: StackConfig,
  localBucket: string | undefined,
): Promise<{ sheet: LoadSheet; source: string }> {
  if (file) return { sheet: await readLoadSheetFile(file), source: file };
  if (localBucket) {
    const file = path.join(localBucket, hubConfigurationFolder(config.jobName), HUB_CONFIGURATION_FILES.clsCsv);
    if (fs.existsSync(file)) return { sheet: await readLoadSheetFile(file), source: file };
  }
  if (!config.cls)
    throw new UserError(
      "no CLS load sheet to check against: give --sheet FILE, or set hubExport:cls.exports in the stack config",
    );
  const built = await buildStackSheets(config.cls);
  return { sheet: built.sheet, source: `built from ${config.cls.exports}` };
}
