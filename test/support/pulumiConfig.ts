/**
 * What `pulumi config set` and `pulumi config rm` write into a stack file's `config:` block, for running the commands
 * the docs and the preflight print without the Pulumi CLI. The value typing is the CLI's: a top-level value is always
 * a string; with `--path`, `true`/`false` become booleans and a value `strconv.Atoi` reads becomes an integer unless it
 * starts with 0 (kept as a string, pulumi/pulumi#4393); `--secret` stores ciphertext (`{secure: ...}`).
 */
import fs from "node:fs";
import YAML from "yaml";

export type ConfigBlock = Record<string, unknown>;

/** Splits a shell command line: words, 'single quoted' and "double quoted" strings; a # outside quotes ends it. */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === "'" || c === '"') {
      const end = line.indexOf(c, i + 1);
      if (end < 0) throw new Error(`unterminated quote in: ${line}`);
      word = (word ?? "") + line.slice(i + 1, end);
      i = end;
    } else if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (c === "#" && word === undefined) {
      break;
    } else {
      word = (word ?? "") + c;
    }
  }
  if (word !== undefined) words.push(word);
  return words;
}

/** `hubExport:hubTenants[0].clientSecret` → ["hubExport:hubTenants", 0, "clientSecret"]. */
function parsePath(key: string): (string | number)[] {
  const colon = key.indexOf(":");
  const [first, ...rest] = key.slice(colon + 1).split(/(?=[.[])/);
  const path: (string | number)[] = [key.slice(0, colon + 1) + first];
  for (const part of rest) path.push(part.startsWith("[") ? Number(part.slice(1, -1)) : part.slice(1));
  return path;
}

/** The CLI's typing of a `--path` value. */
export function pathValue(text: string): unknown {
  if (text === "true" || text === "false") return text === "true";
  if (/^[-+]?\d+$/.test(text) && !(text.length > 1 && text.startsWith("0")) && Number.isSafeInteger(Number(text)))
    return Number(text);
  return text;
}

let ciphertexts = 0;

/**
 * Applies one `pulumi config set|rm ...` command line to `config` (changed in place and returned). A value the CLI
 * would prompt for (`--secret` without a value) is `prompt`.
 */
export function applyConfigCommand(config: ConfigBlock, line: string, prompt = "prompted-value"): ConfigBlock {
  const { remove, path, value } = parseConfigCommand(line, prompt);
  let target: Record<string | number, unknown> = config;
  for (let i = 0; i < path.length - 1; i++) {
    const next = target[path[i]];
    if (next === null || typeof next !== "object") target[path[i]] = typeof path[i + 1] === "number" ? [] : {};
    target = target[path[i]] as Record<string | number, unknown>;
  }
  const last = path[path.length - 1];
  if (remove) {
    if (Array.isArray(target) && typeof last === "number") target.splice(last, 1);
    else delete target[last];
  } else {
    target[last] = value;
  }
  return config;
}

/** The same command applied to a stack file's document (`config:` block), its comments and layout kept. */
export function applyConfigCommandToDocument(doc: YAML.Document, line: string, prompt = "prompted-value"): void {
  const { remove, path, value } = parseConfigCommand(line, prompt);
  if (remove) doc.deleteIn(["config", ...path]);
  else doc.setIn(["config", ...path], value);
}

/** What one `pulumi config set|rm ...` line does: the key's path and the value the CLI stores. */
function parseConfigCommand(
  line: string,
  prompt: string,
): { remove: boolean; path: (string | number)[]; value: unknown } {
  const words = shellWords(line);
  if (words[0] !== "pulumi" || words[1] !== "config" || !["set", "rm"].includes(words[2]))
    throw new Error(`not a pulumi config set|rm command: ${line}`);
  const flags = new Set<string>();
  const args: string[] = [];
  for (let i = 3; i < words.length; i++) {
    if (words[i] === "--stack" || words[i] === "-s") i++;
    else if (words[i].startsWith("--")) flags.add(words[i]);
    else args.push(words[i]);
  }
  const [key, given] = args;
  if (!key?.includes(":")) throw new Error(`no namespaced key in: ${line}`);
  const text = given ?? prompt;
  const value = flags.has("--secret")
    ? { secure: `v1:ciphertext-${++ciphertexts}` }
    : flags.has("--path")
      ? pathValue(text)
      : text;
  return { remove: words[2] === "rm", path: flags.has("--path") ? parsePath(key) : [key], value };
}

/** A stack file with its `config:` block replaced. */
export function writeStackFile(file: string, from: string, config: ConfigBlock): void {
  const doc = YAML.parse(fs.readFileSync(from, "utf8")) as { config: ConfigBlock };
  fs.writeFileSync(file, YAML.stringify({ ...doc, config }));
}

/** The `config:` block of a stack file. */
export function readConfigBlock(file: string): ConfigBlock {
  return (YAML.parse(fs.readFileSync(file, "utf8")) as { config: ConfigBlock }).config;
}
