/**
 * The statuses of HUB_<CLIENT>_MESSAGES_STATUS (the run tables' SQL checks the same list; a test compares them).
 * A message without a row has not been attempted yet.
 */
export const MESSAGE_STATUS = {
  /** Released for its next attempt (a held-back message whose codes the CLS load sheet has now). */
  pending: "PENDING",
  published: "PUBLISHED",
  /** Not published; the next run queues it again under its messageId. */
  failed: "FAILED",
  /** Held back by the strict CLS check until the load sheet has its codes. */
  heldBack: "HELD_BACK",
  /** Refused for good by set_aside_after_runs runs: no longer retried until `hub-export retry`. */
  setAside: "SET_ASIDE",
  /** Each of its employees is in a newer message: never sent again. */
  superseded: "SUPERSEDED",
  /** Given up by an operator (`hub-export discard`). */
  discarded: "DISCARDED",
} as const;
export type MessageStatus = (typeof MESSAGE_STATUS)[keyof typeof MESSAGE_STATUS];

/**
 * Statuses of a message no run sends (again): published, or given up (set aside, superseded, discarded). A run resumed
 * after a stop finds such messages still queued and leaves them there for the finish.
 */
export const NOT_SENT: readonly MessageStatus[] = [
  MESSAGE_STATUS.published,
  MESSAGE_STATUS.setAside,
  MESSAGE_STATUS.superseded,
  MESSAGE_STATUS.discarded,
];
