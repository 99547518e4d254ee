import { messageActionCommand } from "../messageAction";

export default messageActionCommand("Retry", {
  summary:
    "Send a set-aside message again with the next run (refused for good again, it is set aside again at once); recorded in the run history",
  detail:
    "The message becomes FAILED in _STATUS: the next run queues it under its messageId; its refusals stay one short of set_aside_after_runs.",
  reasonExample: '--reason "the hub accepts larger messages now"',
  does: "the next run publishes the message again under its messageId",
  exit1:
    "refused (a run holds the lock, or waits to be resumed; the message is not set aside), an unknown message, or a database problem: the message names it",
});
