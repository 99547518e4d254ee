/** What a URL must not hide, and how to decode one without throwing: for every place a URL is read (task, CLI, config). */
import { cut, redact } from "./redact";

/** Query parameters whose value is a secret (`?password=`, `?client_secret=`, `?access_token=`, `?api-key=`, `?sig=`). */
const SECRET_PARAMETER = /pass|pwd|secret|token|api[-_]?key|access[-_]?key|signature|credential|^(key|sig|auth)$/i;

/** The name of a query parameter of `url` that carries a secret, which is as exposed there as in `user:password@`. */
export function secretParameter(url: URL): string | undefined {
  return [...url.searchParams.keys()].find((name) => SECRET_PARAMETER.test(name));
}

/** The refusal of a URL with the secret query parameter `name` (never its value); `instead` says what to use. */
export function secretInQuery(name: string, instead: string): string {
  return `carries a secret in its query string (${redact(cut(name, 40))}=...): remove it; ${instead}`;
}

/** `text` decoded from %-escapes, or undefined when an escape is malformed (`%E0` alone is no UTF-8). */
export function percentDecoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}
