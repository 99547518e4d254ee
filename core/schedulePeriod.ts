/**
 * The longest time between two starts of an EventBridge Scheduler schedule, for the "no completed run within N hours"
 * alarm's default: rate(...) gives it; cron(...) is expanded over a year and the widest gap taken. L, W or #, a fixed
 * year, or one-time at(...) have no derivable period: the caller asks for an explicit value then.
 */

const MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
const DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** Hours between two starts at most; undefined when the expression has no derivable period. */
export function schedulePeriodHours(expression: string): number | undefined {
  const rate = /^rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)$/.exec(expression.trim());
  if (rate) {
    const n = Number(rate[1]);
    const unit = rate[2].replace(/s$/, "");
    return unit === "minute" ? n / 60 : unit === "hour" ? n : n * 24;
  }
  const cron = /^cron\((.+)\)$/.exec(expression.trim());
  if (!cron) return undefined;
  const fields = cron[1].trim().split(/\s+/);
  if (fields.length !== 6) return undefined;
  const [min, hour, dom, month, dow, year] = fields;
  if (year !== "*" && year !== "?") return undefined;
  const minutes = expand(min, 0, 59);
  const hours = expand(hour, 0, 23);
  const days = dom === "?" ? undefined : expand(dom, 1, 31);
  const months = expand(month, 1, 12, MONTHS);
  const weekdays = dow === "?" ? undefined : expand(dow, 1, 7, DAYS);
  if (!minutes || !hours || !months || (dom !== "?" && !days) || (dow !== "?" && !weekdays)) return undefined;
  const dayTimes = [...hours]
    .sort((a, b) => a - b)
    .flatMap((h) => [...minutes].sort((a, b) => a - b).map((m) => h * HOUR_MS + m * 60_000));

  // Two years from a fixed start: every start of a yearly schedule is seen at least twice.
  const start = Date.UTC(2027, 0, 1);
  let previous: number | undefined;
  let widest = 0;
  for (let day = 0; day < 731; day++) {
    const date = new Date(start + day * DAY_MS);
    if (!months.has(date.getUTCMonth() + 1)) continue;
    if (days && !days.has(date.getUTCDate())) continue;
    if (weekdays && !weekdays.has(date.getUTCDay() + 1)) continue;
    for (const offset of dayTimes) {
      const at = date.getTime() + offset;
      if (previous !== undefined) widest = Math.max(widest, at - previous);
      previous = at;
    }
  }
  return widest > 0 ? widest / HOUR_MS : undefined;
}

/** The default N of the alarm: the period plus a quarter of it, at least 2 hours more, in whole hours. */
export function defaultNoCompletedRunHours(periodHours: number): number {
  return Math.ceil(periodHours + Math.max(2, periodHours / 4));
}

/** The values of one cron field, or undefined when it uses what is not supported (L, W, #, bad values). */
function expand(field: string, low: number, high: number, names?: string[]): Set<number> | undefined {
  const values = new Set<number>();
  const value = (text: string): number | undefined => {
    const named = names?.indexOf(text.toUpperCase()) ?? -1;
    const n = named >= 0 ? named + low : /^\d+$/.test(text) ? Number(text) : NaN;
    return Number.isInteger(n) && n >= low && n <= high ? n : undefined;
  };
  for (const part of field.split(",")) {
    const m = /^(\*|[A-Za-z0-9]+(?:-[A-Za-z0-9]+)?)(?:\/(\d+))?$/.exec(part);
    if (!m) return undefined;
    const step = m[2] === undefined ? 1 : Number(m[2]);
    if (step <= 0) return undefined;
    let from: number | undefined;
    let to: number | undefined;
    if (m[1] === "*") [from, to] = [low, high];
    else {
      const [a, b] = m[1].split("-");
      from = value(a);
      to = b === undefined ? (m[2] === undefined ? from : high) : value(b);
    }
    if (from === undefined || to === undefined || to < from) return undefined;
    for (let v = from; v <= to; v += step) values.add(v);
  }
  return values.size > 0 ? values : undefined;
}
