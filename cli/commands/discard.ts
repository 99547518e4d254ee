import { messageActionCommand } from "../messageAction";

export default messageActionCommand("Discard", {
  summary: "Give up on a set-aside (or failed) message: no run sends it again; recorded in the run history",
  detail:
    "The message becomes DISCARDED in _STATUS, with who and why as its reason; its employees reach the hub with their next change.",
  reasonExample: '--reason "the row is fixed; its next change sends it"',
  does: "the message is never sent; the run history says who discarded it and why",
  exit1:
    "refused (a run holds the lock, or waits to be resumed; the message is not set aside or failed), an unknown message, or a database problem: the message names it",
});
