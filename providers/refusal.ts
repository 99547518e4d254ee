/**
 * A refusal its user fixes (a foreign state: a shared table or file someone else changed, a hub that refuses; the
 * config): an Error named "UserError" (core/refusals.ts USER_ERROR_NAME), which the CLI shows as a user error (exit 1,
 * no stack trace, never "internal error"). Serialized provider code cannot capture core/errors's class: provider files
 * alias this function into a local const, as they do providers/json.ts's.
 */
export function refusal(message: string): Error {
  const error = new Error(message);
  error.name = "UserError";
  return error;
}
