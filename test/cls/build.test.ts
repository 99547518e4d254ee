/**
 * The CLS load sheet from the HR system's exports: the sample exports we ship, column detection and mapping, and the
 * files that are refused (ambiguous, malformed, missing) or reported (blank and duplicate codes).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { buildFromFolder, checkExportFiles, readLoadSheetFile, writeLoadSheet } from "../../cls/files";
import { loadSheetCsv, parseLoadSheetCsv, sniffDelimiter } from "../../cls/csv";
import { loadSheetXlsx } from "../../cls/xlsx";
import { knownCodes, rowCounts } from "../../cls/loadSheet";
import {
  BUSINESS_OBJECTS,
  CLS_TABLE,
  COMMUNICATION_TYPE,
  EMPLOYEE_STATUS,
  STATUS,
  fieldName,
} from "../../core/clsTable";
import { businessObjectOfFile, readCodeList, ExportError } from "../../cls/exports";
import { uncheckedFields } from "../../task/cls/checkSql";
import { SAMPLE_BUSINESS_OBJECTS } from "../../task/model/sampleData";
import { UserError } from "../../core/errors";
import { PROJECT_ROOT, runMain } from "../support/cli";

const SAMPLES = path.join(PROJECT_ROOT, "cls", "samples");
const FIXTURES = path.join(PROJECT_ROOT, "test", "fixtures", "cls");
const temps: string[] = [];

/** A copy of the sample exports, with files replaced (name → fixture file, or null to remove). */
function exportsFolder(replace: Record<string, string | null> = {}): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-cls-exports-"));
  temps.push(dir);
  for (const name of fs.readdirSync(SAMPLES)) fs.copyFileSync(path.join(SAMPLES, name), path.join(dir, name));
  for (const [name, fixture] of Object.entries(replace)) {
    for (const existing of fs.readdirSync(dir))
      if (existing.replace(/\.[^.]+$/, "") === name.replace(/\.[^.]+$/, "")) fs.rmSync(path.join(dir, existing));
    if (fixture) fs.copyFileSync(path.join(FIXTURES, fixture), path.join(dir, name));
  }
  return dir;
}

async function failure(dir: string, options?: Parameters<typeof buildFromFolder>[1]): Promise<string[]> {
  try {
    await buildFromFolder(dir, options);
  } catch (err) {
    if (err instanceof UserError) return err.lines;
    throw err;
  }
  throw new Error("expected the build to fail");
}

afterEach(() => {
  for (const dir of temps.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe("the sample exports", () => {
  it("build a sheet with every row of the CLS table, SYSTEM EXTERNAL, the fixed lists built in and the sample data's codes", async () => {
    const built = await buildFromFolder(SAMPLES);
    expect(built.problems).toEqual([]);
    expect(CLS_TABLE).toHaveLength(20);
    const counts = rowCounts(built.sheet);
    expect(Object.keys(counts)).toEqual(CLS_TABLE.map(fieldName));
    for (const row of CLS_TABLE) {
      const expected = "fixed" in row.source ? row.source.fixed : SAMPLE_BUSINESS_OBJECTS[row.source.businessObject];
      const rows = built.sheet.rows.filter(
        (r) => r.CLS_ENTITY_NAME === row.entity && r.CLS_CODE_FIELD_NAME === row.field,
      );
      expect(rows.map((r) => ({ code: r.CLS_CODE, description: r.CLS_DESCRIPTION }))).toEqual(expected);
    }
    expect(new Set(built.sheet.rows.map((r) => r.SYSTEM))).toEqual(new Set(["EXTERNAL"]));
    expect(knownCodes(built.sheet).get("User.Status")).toEqual(new Set(STATUS.map((s) => s.code)));
    expect(knownCodes(built.sheet).get("User.EmployeeStatusCode")).toEqual(new Set(EMPLOYEE_STATUS.map((s) => s.code)));
    expect(knownCodes(built.sheet).get("UserCommunication.CommunicationType")).toEqual(
      new Set(COMMUNICATION_TYPE.map((s) => s.code)),
    );
    // Each export's columns were detected, including XLSX files with a title row above the header and a ;-separated CSV with a BOM.
    expect(Object.fromEntries(built.lists.map((l) => [l.businessObject, [l.codeColumn, l.descriptionColumn]]))).toEqual(
      {
        Country: ["Reference ID", "Country Name"],
        Gender: ["Integration ID", "Description"],
        "Job Family": ["Job Family ID", "Job Family"],
        "Job Profile": ["Job Profile Code", "Job Profile Name"],
        "Communication Usage Type": ["ID", "Name"],
        "Related Person Relationship": ["Reference ID", "Instance"],
      },
    );
  });

  it("writes CSV and XLSX that read back to the same sheet; the XLSX is byte-for-byte stable", async () => {
    const { sheet } = await buildFromFolder(SAMPLES);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-cls-out-"));
    temps.push(dir);
    await writeLoadSheet(path.join(dir, "s.csv"), sheet);
    await writeLoadSheet(path.join(dir, "s.xlsx"), sheet);
    expect(fs.readFileSync(path.join(dir, "s.csv"), "utf8").split("\n")[0]).toBe(
      "SYSTEM,CLS_ENTITY_NAME,CLS_CODE_FIELD_NAME,CLS_CODE,CLS_DESCRIPTION",
    );
    expect(await readLoadSheetFile(path.join(dir, "s.csv"))).toEqual(sheet);
    expect(await readLoadSheetFile(path.join(dir, "s.xlsx"))).toEqual(sheet);
    expect(parseLoadSheetCsv("x", loadSheetCsv(sheet))).toEqual(sheet);
    const first = await loadSheetXlsx(sheet);
    // The same bytes an hour later (a controlled clock): no time is written into the workbook.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 3_600_000 });
    try {
      expect((await loadSheetXlsx(sheet)).equals(first)).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it("every CLS code field has an expression in the export's mapping, so the check covers all 20", () => {
    expect(uncheckedFields()).toEqual([]);
  });
});

describe("column detection and mapping", () => {
  it("refuses an ambiguous file, naming the file and the columns it saw; a mapping in config resolves it", async () => {
    const dir = exportsFolder({ "Country.csv": "ambiguous-Country.csv" });
    const lines = await failure(dir);
    expect(lines).toEqual([
      `cannot build the CLS load sheet from ${dir} (1 problem):`,
      `  ${path.join(dir, "Country.csv")}: ambiguous code column: 'ID', 'Code' could each be it; columns seen: 'ID', 'Code', 'Name'; name the column in hubExport:cls.businessObjects["Country"].code`,
    ]);
    const built = await buildFromFolder(dir, { businessObjects: { Country: { code: "code" } } });
    expect(built.lists.find((l) => l.businessObject === "Country")).toMatchObject({
      codeColumn: "Code",
      descriptionColumn: "Name",
      values: [
        { code: "USA", description: "United States" },
        { code: "DEU", description: "Germany" },
      ],
    });
    const missing = await failure(dir, { businessObjects: { Country: { code: "Country Code" } } });
    expect(missing[1]).toBe(
      `  ${path.join(dir, "Country.csv")}: has no column 'Country Code' (hubExport:cls.businessObjects["Country"].code); columns seen: 'ID', 'Code', 'Name'`,
    );
  });

  it("reports every unusable file at once: malformed CSV and XLSX, no code column, an unknown file, a missing business object", async () => {
    const dir = exportsFolder({
      "Country.csv": "malformed-Country.csv",
      "Job Profile.xlsx": "malformed-Job_Profile.xlsx",
      "Job Family.csv": "nocolumns-Job_Family.csv",
      "Gender.csv": null,
    });
    fs.writeFileSync(path.join(dir, "Salaries.csv"), "ID,Name\n1,x\n");
    fs.writeFileSync(path.join(dir, "README.txt"), "not a spreadsheet: ignored");
    const lines = await failure(dir);
    expect(lines[0]).toBe(`cannot build the CLS load sheet from ${dir} (5 problems):`);
    expect(lines).toContain(
      `  ${path.join(dir, "Salaries.csv")}: not the export of a known business object: name the file after one of ${BUSINESS_OBJECTS.join(", ")}, or map it in hubExport:cls.businessObjects.<name>.file`,
    );
    expect(lines.find((l) => l.includes("Country.csv"))).toMatch(
      /Country\.csv: is not a readable CSV file: Quote Not Closed/,
    );
    expect(lines.find((l) => l.includes("Job Profile.xlsx"))).toMatch(
      /Job Profile\.xlsx: is not a readable XLSX workbook: /,
    );
    expect(lines).toContain(
      `  ${path.join(dir, "Job Family.csv")}: no code column found; columns seen: 'Foo', 'Bar'; name the column in hubExport:cls.businessObjects["Job Family"].code`,
    );
    expect(lines).toContain(
      `  ${dir}: no export of Gender (files seen: Communication Usage Type.csv, Country.csv, Job Family.csv, Job Profile.xlsx, Related Person Relationship.xlsx, Salaries.csv)`,
    );
  });

  it("are checked by their names alone for validate: the same lines for what the names show, no file read", async () => {
    const dir = exportsFolder({ "Job Profile.xlsx": "malformed-Job_Profile.xlsx", "Gender.csv": null });
    fs.writeFileSync(path.join(dir, "Salaries.csv"), "ID,Name\n1,x\n");
    let names: string[] = [];
    try {
      checkExportFiles(dir);
    } catch (err) {
      names = (err as UserError).lines;
    }
    const built = await failure(dir);
    expect(names[0]).toBe(`cannot build the CLS load sheet from ${dir} (2 problems):`);
    expect(built.slice(1)).toEqual(expect.arrayContaining(names.slice(1)));
    expect(names.join("\n")).not.toContain("not a readable");
    expect(built.join("\n")).toContain("Job Profile.xlsx: is not a readable XLSX workbook");
    // A folder whose names are right passes, whatever its files hold.
    expect(() => checkExportFiles(exportsFolder({ "Job Profile.xlsx": "malformed-Job_Profile.xlsx" }))).not.toThrow();
  });

  it("maps a file to its business object by config, and refuses a second export of the same one", async () => {
    const dir = exportsFolder();
    fs.renameSync(path.join(dir, "Job Profile.xlsx"), path.join(dir, "jp_2026-11.xlsx"));
    expect((await failure(dir))[1]).toContain("jp_2026-11.xlsx: not the export of a known business object");
    const built = await buildFromFolder(dir, { businessObjects: { "Job Profile": { file: "jp_2026-11.xlsx" } } });
    expect(built.lists.find((l) => l.businessObject === "Job Profile")!.values).toEqual(
      SAMPLE_BUSINESS_OBJECTS["Job Profile"],
    );
    fs.copyFileSync(path.join(SAMPLES, "Gender.csv"), path.join(dir, "Gender export 2.csv"));
    expect(await failure(dir, { businessObjects: { "Job Profile": { file: "jp_2026-11.xlsx" } } })).toContain(
      `  ${path.join(dir, "Gender.csv")}: a second export of Gender (the first is Gender export 2.csv): keep one`,
    );
  });

  it("reports blank and duplicate codes one line each and leaves those rows out", async () => {
    const dir = exportsFolder({ "Gender.csv": "duplicates-Gender.csv" });
    const built = await buildFromFolder(dir);
    const file = path.join(dir, "Gender.csv");
    expect(built.problems).toEqual([
      `${file} row 4: blank code in column 'Integration ID' (description 'Unknown'): row left out`,
      `${file} row 5: duplicate code 'Male' (first at row 2): row left out`,
      `${file} row 8: duplicate code 'Female' (first at row 3): row left out`,
    ]);
    expect(built.lists.find((l) => l.businessObject === "Gender")!.values.map((v) => v.code)).toEqual([
      "Male",
      "Female",
      "Not_Declared",
    ]);
  });

  it("detects names and delimiters the way the HR system's exports vary", () => {
    expect(businessObjectOfFile("related_person_relationship (2).XLSX")).toBe("Related Person Relationship");
    expect(businessObjectOfFile("JobFamily.csv")).toBe("Job Family");
    expect(businessObjectOfFile("job profile - job family.csv")).toBeUndefined();
    expect(sniffDelimiter("\uFEFFa;b;c\n1;2;3")).toBe(";");
    expect(sniffDelimiter("a\tb\n")).toBe("\t");
    expect(sniffDelimiter('"x;y",b\n')).toBe(",");
    // Reference ID wins over another *ID column; two equally good names are ambiguous.
    const rows = (header: string[]) => [
      { line: 1, cells: header },
      { line: 2, cells: header.map((h) => `${h}-1`) },
    ];
    expect(readCodeList("f.csv", "Country", rows(["Reference ID", "Workday ID", "Name"])).codeColumn).toBe(
      "Reference ID",
    );
    expect(() => readCodeList("f.csv", "Country", rows(["Code", "Name", "Description"]))).toThrow(ExportError);
    expect(() => readCodeList("f.csv", "Country", [{ line: 1, cells: ["Integration IDs: Country"] }])).toThrow(
      "f.csv: has no header row with a code and a description column (only one column seen: 'Integration IDs: Country')",
    );
  });
});

describe("hub-export cls build", () => {
  it("writes both formats and prints what it read", async () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-cls-cli-"));
    temps.push(out);
    const result = await runMain([
      "cls",
      "build",
      "--from",
      SAMPLES,
      "--out",
      path.join(out, "CLS.csv"),
      "--out",
      path.join(out, "CLS.xlsx"),
    ]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      `CLS load sheet: 126 rows for 20 code fields, written to ${path.join(out, "CLS.csv")} and ${path.join(out, "CLS.xlsx")}`,
    );
    expect(result.stdout).toMatch(
      /Job Profile\s+10 codes {2}from Job Profile\.xlsx \(code 'Job Profile Code', description 'Job Profile Name'\)/,
    );
    expect(await readLoadSheetFile(path.join(out, "CLS.xlsx"))).toEqual(
      await readLoadSheetFile(path.join(out, "CLS.csv")),
    );
  });

  it("uses the only column besides the code as the description whatever its name, and says so in one line", async () => {
    const dir = exportsFolder({ "Gender.csv": "onecolumn-Gender.csv", "Job Family.xlsx": "onecolumn-Job_Family.xlsx" });
    const outDir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-cls-cli-"));
    temps.push(outDir);
    const out = path.join(outDir, "CLS.csv");
    const result = await runMain(["cls", "build", "--from", dir, "--out", out]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const notes = result.stdout.split("\n").filter((l) => l.startsWith("  note: "));
    expect(notes).toHaveLength(2);
    expect(notes).toEqual(
      expect.arrayContaining([
        `  note: ${path.join(dir, "Job Family.xlsx")}: description column 'Bereich', the only column besides the code 'Job Family ID'`,
        `  note: ${path.join(dir, "Gender.csv")}: description column 'Geschlecht', the only column besides the code 'Integration ID'`,
      ]),
    );
    const sheet = await readLoadSheetFile(out);
    for (const businessObject of ["Job Family", "Gender"] as const) {
      const row = CLS_TABLE.find((r) => "businessObject" in r.source && r.source.businessObject === businessObject)!;
      const rows = sheet.rows.filter((r) => r.CLS_ENTITY_NAME === row.entity && r.CLS_CODE_FIELD_NAME === row.field);
      expect(
        rows.map((r) => ({ code: r.CLS_CODE, description: r.CLS_DESCRIPTION })),
        businessObject,
      ).toEqual(SAMPLE_BUSINESS_OBJECTS[businessObject]);
    }

    const json = JSON.parse((await runMain(["cls", "build", "--from", dir, "--out", out, "--json"])).stdout);
    expect(json.exports.find((e: { businessObject: string }) => e.businessObject === "Gender")).toMatchObject({
      descriptionColumn: "Geschlecht",
      note: expect.stringContaining("the only column besides the code"),
    });
    // A named description column gets no note; two unknown columns stay a question for the mapping.
    expect(json.exports.find((e: { businessObject: string }) => e.businessObject === "Country").note).toBeUndefined();
    const rows = [
      { line: 1, cells: ["Job Family ID", "Bereich", "Aktiv"] },
      { line: 2, cells: ["Sales", "Vertrieb", "ja"] },
    ];
    expect(() => readCodeList("f.xlsx", "Job Family", rows)).toThrow(
      "f.xlsx: no description column found; columns seen: 'Job Family ID', 'Bereich', 'Aktiv'",
    );
  });

  it("warns about duplicates (and fails with --strict, writing nothing); refuses an ambiguous file with one line, no stack trace", async () => {
    const dir = exportsFolder({ "Gender.csv": "duplicates-Gender.csv" });
    const out = path.join(dir, "out.csv");
    const strict = await runMain(["cls", "build", "--from", dir, "--out", out, "--strict"]);
    expect(strict.code).toBe(1);
    expect(strict.stderr.split("\n").filter((l) => l.startsWith("warning: "))).toHaveLength(3);
    expect(strict.stderr).toContain("3 blank or duplicate code(s) in the exports (--strict): nothing written");
    expect(fs.existsSync(out)).toBe(false);
    const lenient = await runMain(["cls", "build", "--from", dir, "--out", out, "--json"]);
    expect(lenient.code).toBe(0);
    // Gender has 3 codes instead of 4, in two code fields (User.Gender, UserDependent.Gender).
    expect(JSON.parse(lenient.stdout)).toMatchObject({
      rows: 124,
      problems: expect.arrayContaining([expect.stringContaining("duplicate code 'Male'")]),
    });

    const ambiguous = exportsFolder({ "Country.csv": "ambiguous-Country.csv" });
    const refused = await runMain(["cls", "build", "--from", ambiguous, "--out", path.join(ambiguous, "x.csv")]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      "ambiguous code column: 'ID', 'Code' could each be it; columns seen: 'ID', 'Code', 'Name'",
    );
    expect(refused.stderr).not.toMatch(/\n\s+at /);
    const usage = await runMain(["cls", "build", "--from", SAMPLES, "--out", "x.txt"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("--out x.txt: must end in .csv or .xlsx");
  });
});
