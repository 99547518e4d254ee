/** Resolves on the first SIGINT or SIGTERM. Listening starts at the call, so call it before announcing readiness. */
export function untilStopSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}
