/** An option whose value is one of the emulator's specs (faults, seed, latency, rate limit). */
import { UsageError } from "../core/errors";
import { FaultSpecError } from "../emulator/faults";

/** A bad spec is wrong usage (exit 2), reported with the option's name. */
export function asUsage<T>(option: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof FaultSpecError) throw new UsageError(`${option}: ${err.message}`);
    throw err;
  }
}
