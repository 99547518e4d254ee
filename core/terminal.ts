/** Colour and text attributes on a terminal, by the conventions every command honours. */

/** https://no-color.org: a non-empty NO_COLOR turns colour and text attributes off; cursor movement stays. */
export function colorAllowed(env: NodeJS.ProcessEnv = process.env): boolean {
  return !env.NO_COLOR;
}

export function bold(text: string, env: NodeJS.ProcessEnv = process.env): string {
  return colorAllowed(env) ? `\x1b[1m${text}\x1b[0m` : text;
}
