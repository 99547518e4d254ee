/** How often `onParentGone` looks at the parent process. */
const PARENT_POLL_MS = 500;

/**
 * Calls `onGone` once when the process that started this one has ended (this one is re-parented: `process.ppid`
 * changes). `npm start` signalled alone (a supervisor, `timeout`, `kill <pid>`) ends npm and the shell between, not
 * this process, which gets no signal of its own. Returns the function that stops watching.
 */
export function onParentGone(onGone: () => void): () => void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    onGone();
  }, PARENT_POLL_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * Resolves on the first SIGINT or SIGTERM, or when the parent process ends (as SIGTERM would). Listening starts at
 * the call, so call it before announcing readiness.
 */
export function untilStopSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      unwatch();
      resolve();
    };
    const unwatch = onParentGone(stop);
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}
