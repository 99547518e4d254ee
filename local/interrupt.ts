/**
 * Ctrl-C (SIGINT) and SIGTERM during `npm start`. The first stops in order: the export task, when it runs, gets the
 * signal and stops cleanly (resumable: its Stopped row says where it was), or the start stops after the step at hand;
 * then the emulator and PostgreSQL stop, and the summary says so. A second one exits at once, still stopping
 * PostgreSQL. The task and the server run in process groups of their own, so a Ctrl-C in the terminal reaches only
 * this process, which passes it on once, in this order. The end of the parent process (`npm start` signalled alone)
 * counts as SIGTERM.
 */
import os from "node:os";
import type { ChildProcess } from "node:child_process";
import { UserError } from "../core/errors";
import { onParentGone } from "./signals";

/** The exit code of a start interrupted by `signal`: 128 + its number, as shells report it (130 for SIGINT). */
export function interruptedExitCode(signal: NodeJS.Signals): number {
  return 128 + os.constants.signals[signal];
}

/** The start was interrupted before the export task ran. */
export class LocalInterrupted extends UserError {
  constructor(
    readonly signal: NodeJS.Signals,
    before: string,
  ) {
    super(
      `interrupted (${signal}) before ${before}: stopped the emulator and PostgreSQL; nothing of the export run was started ('npm start' again runs it)`,
    );
    this.name = "LocalInterrupted";
  }
}

/** Past the task's grace period (it exits by then by itself), so long again at most before it is killed. */
const KILL_AFTER_GRACE_MS = 10_000;
/** A second signal: the task gets it too (it exits at once, logging why), and is killed if still there after this. */
const SECOND_SIGNAL_MS = 2_000;

export class Interrupts {
  /** The first signal, once one came. */
  signal: NodeJS.Signals | null = null;
  /** The signal the export task was passed to stop it. */
  taskSignal: NodeJS.Signals | null = null;
  private task?: ChildProcess;
  private killTimer?: NodeJS.Timeout;
  private readonly handler = (signal: NodeJS.Signals) => this.received(signal);
  private readonly unwatchParent: () => void;

  constructor(
    private readonly options: {
      /** The task's grace period (its HUB_EXPORT_STOP_GRACE_SECONDS). */
      graceSeconds: number;
      /** One line for the person at the terminal. */
      notify: (line: string) => void;
      /** Stops the emulator and PostgreSQL; then the process exits with the signal's code. */
      stopAll: () => Promise<void>;
    },
  ) {
    process.on("SIGINT", this.handler);
    process.on("SIGTERM", this.handler);
    this.unwatchParent = onParentGone(() => {
      options.notify(
        "the process that started this one has ended (npm start signalled alone?): stopping as on SIGTERM",
      );
      this.received("SIGTERM");
    });
  }

  /** The export task started: a signal now (or one that came while it started) is passed on to it. */
  running(task: ChildProcess): void {
    this.task = task;
    task.once("exit", () => {
      this.task = undefined;
      if (this.killTimer) clearTimeout(this.killTimer);
    });
    if (this.signal) this.stopTask(this.signal);
  }

  /** Call between steps: an interrupted start goes no further. */
  throwIfInterrupted(before: string): void {
    if (this.signal) throw new LocalInterrupted(this.signal, before);
  }

  dispose(): void {
    process.off("SIGINT", this.handler);
    process.off("SIGTERM", this.handler);
    this.unwatchParent();
    if (this.killTimer) clearTimeout(this.killTimer);
  }

  private received(signal: NodeJS.Signals): void {
    const again = signal === "SIGINT" ? "Ctrl-C again" : `${signal} again`;
    if (this.signal) {
      this.options.notify(`${signal} again: exiting at once; stopping PostgreSQL`);
      void this.exitNow(signal);
      return;
    }
    this.signal = signal;
    if (this.task) {
      this.options.notify(
        `${signal}: the export task stops cleanly (within its grace period of ${this.options.graceSeconds} s), then the emulator and PostgreSQL; ${again} exits at once`,
      );
      this.stopTask(signal);
    } else
      this.options.notify(
        `${signal}: stopping after the step at hand, then the emulator and PostgreSQL; ${again} exits at once`,
      );
  }

  private stopTask(signal: NodeJS.Signals): void {
    this.taskSignal = signal;
    this.task?.kill(signal);
    this.killTimer = setTimeout(
      () => this.task?.kill("SIGKILL"),
      this.options.graceSeconds * 1000 + KILL_AFTER_GRACE_MS,
    );
  }

  private async exitNow(signal: NodeJS.Signals): Promise<void> {
    const task = this.task;
    if (task) {
      const exited = new Promise((resolve) => task.once("exit", resolve));
      task.kill(signal);
      const timer = setTimeout(() => task.kill("SIGKILL"), SECOND_SIGNAL_MS);
      await exited;
      clearTimeout(timer);
    }
    await this.options.stopAll().catch(() => {});
    process.exit(interruptedExitCode(this.signal ?? signal));
  }
}
