/**
 * A secret value from the stack config. It prints as [secret] in logs, JSON and errors, so that validated config can
 * be passed around and logged without leaking. The committed stack files set none: `pulumi up` stops on a `missing`
 * one with the command that sets it (config/preflight.ts).
 */
const REDACTED = "[secret]";

export class Secret {
  readonly #value: string | undefined;
  private constructor(
    value: string | undefined,
    readonly encrypted: boolean,
    readonly missing = false,
  ) {
    this.#value = value;
  }
  static plain(value: string): Secret {
    return new Secret(value, false);
  }
  /** A `secure:` value read from a stack file: present, but only the Pulumi CLI can decrypt it. */
  static encrypted(): Secret {
    return new Secret(undefined, true);
  }
  /** Not set in the stack config yet. */
  static missing(): Secret {
    return new Secret(undefined, false, true);
  }
  /** The value; `what` names the config key in the error when it is still ciphertext or not set. */
  reveal(what = "secret"): string {
    if (this.missing) throw new Error(`${what} is not set: set it with 'pulumi config set --secret --path'`);
    if (this.#value === undefined) {
      throw new Error(
        `${what} is encrypted in the stack file; it is only available under 'pulumi up' or with a local override`,
      );
    }
    return this.#value;
  }
  toString(): string {
    return REDACTED;
  }
  toJSON(): string {
    return REDACTED;
  }
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return REDACTED;
  }
}
