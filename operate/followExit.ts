/** The exit code when `run-now --wait` gives up following (as timeout(1) does); the task itself keeps running. */
export const FOLLOW_TIMEOUT_EXIT = 124;
