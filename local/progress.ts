/**
 * The progress display of `npm start`: on a terminal, one line per phase rewritten in place with its count and rate;
 * otherwise (CI, a pipe, --json) plain lines, one per phase change and at most one every few seconds per phase.
 */
import { bold } from "../core/terminal";

export interface PhaseUpdate {
  phase: string;
  done: number;
  unit?: string;
  finished?: boolean;
  /** Seconds since the phase began, as the task measured it (else the display's own clock). */
  seconds?: number;
}

export interface ProgressDisplay {
  step(message: string): void;
  update(update: PhaseUpdate): void;
  close(): void;
}

export function createProgress(stream: NodeJS.WriteStream | NodeJS.WritableStream): ProgressDisplay {
  const tty = (stream as NodeJS.WriteStream).isTTY === true;
  return tty ? new TerminalProgress(stream as NodeJS.WriteStream) : new PlainProgress(stream);
}

interface PhaseState {
  started: number;
  lastPrinted: number;
  line: string;
}

function describe(update: PhaseUpdate, started: number): string {
  const seconds = update.seconds ?? (Date.now() - started) / 1000;
  const rate = seconds > 0.2 ? ` ${Math.round(update.done / seconds).toLocaleString("en-US")}/s` : "";
  const status = update.finished ? `done in ${seconds.toFixed(1)}s` : "";
  return `${update.phase.padEnd(12)} ${update.done.toLocaleString("en-US").padStart(15)} ${update.unit ?? ""}${rate} ${status}`.trimEnd();
}

class PlainProgress implements ProgressDisplay {
  private phases = new Map<string, PhaseState>();
  constructor(private readonly out: NodeJS.WritableStream) {}
  step(message: string): void {
    this.out.write(`» ${message}\n`);
  }
  update(update: PhaseUpdate): void {
    const now = Date.now();
    let state = this.phases.get(update.phase);
    if (!state) this.phases.set(update.phase, (state = { started: now, lastPrinted: 0, line: "" }));
    if (!update.finished && now - state.lastPrinted < 5000) return;
    state.lastPrinted = now;
    this.out.write(`  ${describe(update, state.started)}\n`);
  }
  close(): void {}
}

class TerminalProgress implements ProgressDisplay {
  private phases = new Map<string, PhaseState>();
  private drawn = 0;
  constructor(private readonly out: NodeJS.WriteStream) {}
  step(message: string): void {
    this.clear();
    this.out.write(`${bold("»")} ${message}\n`);
    this.phases.clear();
  }
  update(update: PhaseUpdate): void {
    let state = this.phases.get(update.phase);
    if (!state) this.phases.set(update.phase, (state = { started: Date.now(), lastPrinted: 0, line: "" }));
    state.line = describe(update, state.started);
    this.redraw();
  }
  close(): void {
    this.drawn = 0;
  }
  private clear(): void {
    if (this.drawn > 0) this.out.write(`\x1b[${this.drawn}A\x1b[0J`);
    this.drawn = 0;
  }
  private redraw(): void {
    this.clear();
    const lines = [...this.phases.values()].map((p) => `  ${p.line}`);
    this.out.write(lines.join("\n") + "\n");
    this.drawn = lines.length;
  }
}
