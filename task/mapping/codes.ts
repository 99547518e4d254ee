/**
 * The fixed code lists the export writes itself (core/clsTable.ts holds them with the whole CLS table). Values of business
 * objects (Country, Job Family, Gender, Job Profile, Communication Usage Type, Related Person Relationship) are the HR
 * system's own and pass through; the unknown-code check (task/cls/) compares them with the CLS load sheet.
 */
import { STATUS } from "../../core/clsTable";

export const STATUS_CODES = { active: STATUS[0].code, inactive: STATUS[1].code } as const;
