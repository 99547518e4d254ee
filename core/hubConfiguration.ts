/** The objects of a job's hub-configuration folder: the CLS load sheets (when the stack has them) and the hub checklist. */
import { HUB_CONFIGURATION_FILES, hubConfigurationFolder } from "./naming";
import { checklistMarkdown, type HubChecklist } from "./hubChecklist";

export interface HubConfigurationFile {
  key: string;
  contentType: string;
  body: Buffer;
}

export const XLSX_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

/** The files of job `jobName`'s hub-configuration folder (core/naming.ts hubConfigurationFolder). */
export function hubConfigurationFiles(input: {
  jobName: string;
  checklist: HubChecklist;
  cls?: { csv: string; xlsx: Buffer };
}): HubConfigurationFile[] {
  const key = (name: string) => hubConfigurationFolder(input.jobName) + name;
  const files: HubConfigurationFile[] = [
    {
      key: key(HUB_CONFIGURATION_FILES.checklistMarkdown),
      contentType: "text/markdown; charset=utf-8",
      body: Buffer.from(checklistMarkdown(input.checklist)),
    },
    {
      key: key(HUB_CONFIGURATION_FILES.checklistJson),
      contentType: "application/json",
      body: Buffer.from(JSON.stringify(input.checklist, null, 2) + "\n"),
    },
  ];
  if (input.cls) {
    files.push(
      {
        key: key(HUB_CONFIGURATION_FILES.clsCsv),
        contentType: "text/csv; charset=utf-8",
        body: Buffer.from(input.cls.csv),
      },
      { key: key(HUB_CONFIGURATION_FILES.clsXlsx), contentType: XLSX_CONTENT_TYPE, body: input.cls.xlsx },
    );
  }
  return files;
}

/** Text files are stored as text (readable in a preview), the rest as Base64. */
export function isText(file: HubConfigurationFile): boolean {
  return !file.contentType.startsWith("application/vnd.");
}
