/**
 * The code blocks of the README and docs/, and the rules the docs tests hold each to (test/docs/blocks.test.ts checks
 * them in-process, test/docs/commands.e2e.test.ts runs the shell commands): a block is run (shell), checked (a stack
 * config fragment is validated, JSON is parsed, a picture is a diagram), or says on its first line why it cannot run
 * here: `# not run here: <why>` (`-- not run here: <why>` in SQL). A block that is none of these fails the test.
 */
import YAML from "yaml";

/** The pages a newcomer reads, in the order the README sends them there. */
export const PAGES = [
  "README.md",
  "docs/developing.md",
  "docs/pulumi.md",
  "docs/pulumi-reference.md",
  "docs/onboarding.md",
  "docs/operating.md",
  "docs/hub-contract.md",
];
export const SHELL = new Set(["sh", "bash", "shell", "console"]);

export interface Block {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  /** The block's lines, without the fence's indentation. */
  lines: string[];
}

/** The fenced code blocks of a Markdown text. */
export function codeBlocks(file: string, text: string): Block[] {
  const blocks: Block[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)\s*$/.exec(lines[i]);
    if (!open) continue;
    const indent = open[1].length;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !/^\s*```\s*$/.test(lines[j])) body.push(lines[j++].slice(indent));
    if (j === lines.length) throw new Error(`${file}:${i + 1}: a code block is never closed`);
    blocks.push({ file, line: i + 1, lang: open[2], lines: body });
    i = j;
  }
  return blocks;
}

/** Why the block cannot run here, when its first line says so. */
export function notRunReason(block: Block): string | undefined {
  const first = block.lines.find((l) => l.trim() !== "")?.trim() ?? "";
  const m = /^(?:#|--) not run here: (.{10,})$/.exec(first);
  return m?.[1];
}

/**
 * Large figures replaced by small ones, so that the docs test stays fast; each is the documented command with a
 * smaller size, never another command.
 */
export const SMALLER: ReadonlyArray<{ from: RegExp; to: string; why: string }> = [
  {
    from: /--employees \d{4,}/g,
    to: "--employees 300",
    why: "a benchmark's or a start's size: 300 sample employees run every phase",
  },
  {
    from: /^npm run bench:emulator$/,
    to: "npm run bench:emulator -- --messages 2000",
    why: "100,000 messages by default",
  },
  {
    from: /^npm run bench:plan$/,
    to: "npm run bench:plan -- --tenants 3 --cpu-runs 1",
    why: "plans of 50, 100 and 200 tenants and 5 timed runs of each command by default; 3 is one per region",
  },
];

export interface ShellCommand {
  /** As the docs print it (continuation lines joined). */
  documented: string;
  /** What the test runs with bash in the scratch copy, or null when it checks the command another way. */
  run: string | null;
  /** The exit code the docs give it: 0, or N when its comment starts with `exits N` (a run the docs make fail). */
  exits: number;
}

/**
 * A runnable shell block's commands, each as bash runs it in a copy of the project: `npx hub-export` is the copy's
 * bin/hub-export.js (npx would find the installed one), `npm start` and `npm run NAME` their package.json scripts.
 * Throws, naming the command, when the block holds one the test cannot run.
 */
export function shellCommands(block: Block, scripts: Record<string, string>): ShellCommand[] {
  const joined = block.lines.join("\n").replace(/\\\n\s*/g, "");
  const commands: ShellCommand[] = [];
  for (const raw of joined.split("\n")) {
    const documented = raw.replace(/\s+#(?=\s).*$/, "").trim();
    if (!documented || documented.startsWith("#")) continue;
    const parts = documented.split(/\s+&&\s+/).map((part) => translate(part, scripts, block));
    const run = parts.filter((p): p is string => p !== null);
    const exits = Number(/\s#\s+exits (\d+)\b/.exec(raw)?.[1] ?? 0);
    commands.push({ documented, run: run.length ? run.join(" && ") : null, exits });
  }
  return commands;
}

function translate(part: string, scripts: Record<string, string>, block: Block): string | null {
  let command = part;
  for (const s of SMALLER) command = command.replace(s.from, s.to);
  const npmScript = /^npm (?:start|run ([\w:-]+))(?: -- (.*))?$/.exec(command);
  if (npmScript) {
    const script = scripts[npmScript[1] ?? "start"];
    if (!script) throw new Error(`${where(block)}: '${part}' names no script of package.json`);
    return [script, npmScript[2]].filter(Boolean).join(" ");
  }
  if (/^npx hub-export(\s|$)/.test(command)) return command.replace(/^npx hub-export/, "node bin/hub-export.js");
  // Installing is done (the test runs with the installed node_modules); `npm test` is this suite, which .ci/run runs.
  if (command === "npm ci" || command === "npm test") return null;
  if (command === "rm -rf .local") return command;
  throw new Error(
    `${where(block)}: '${part}' is neither run by the docs test nor marked '# not run here: <why>' on the block's first line`,
  );
}

/** The stack config keys of a YAML block, when it is a fragment of a stack file's `config:`. */
export function stackConfigFragment(block: Block): Record<string, unknown> {
  const doc = YAML.parse(block.lines.join("\n")) as unknown;
  const keys = doc && typeof doc === "object" && !Array.isArray(doc) ? Object.keys(doc) : [];
  if (!keys.length || !keys.every((k) => /^(hubExport|aws):/.test(k))) {
    throw new Error(
      `${where(block)}: a YAML block is a fragment of a stack file's config (hubExport: or aws: keys), or is marked '# not run here: <why>'`,
    );
  }
  return doc as Record<string, unknown>;
}

/** A fragment added to a stack config as a reader would: lists gain its entries, maps its keys, values replaced. */
export function addFragment(config: Record<string, unknown>, fragment: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(fragment)) {
    const current = config[key];
    if (Array.isArray(current) && Array.isArray(value)) config[key] = [...current, ...value];
    else if (isMap(current) && isMap(value)) addFragment(current, value);
    else config[key] = value;
  }
}

const isMap = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

/**
 * A YAML block pasted into a stack file as a reader would paste it (addFragment's rules), comments and layout of the
 * file kept: `doc` is the stack file's document, changed in place.
 */
export function pasteFragment(doc: YAML.Document, block: Block): void {
  stackConfigFragment(block);
  const fragment = YAML.parseDocument(block.lines.join("\n"));
  const paste = (target: YAML.YAMLMap, from: YAML.YAMLMap) => {
    for (const pair of from.items) {
      const key = YAML.isScalar(pair.key) ? pair.key.value : pair.key;
      const current = target.get(key, true);
      if (YAML.isSeq(current) && YAML.isSeq(pair.value)) current.items.push(...pair.value.items);
      else if (YAML.isMap(current) && YAML.isMap(pair.value)) paste(current, pair.value);
      else target.set(pair.key, pair.value);
    }
  };
  paste(doc.get("config", true) as YAML.YAMLMap, fragment.contents as YAML.YAMLMap);
}

/**
 * A `diff` block applied to a file's text as a reader applies it by hand: each hunk (after a line starting with `@@`,
 * which names the key it edits) is its context and `-` lines, found exactly once in the text, replaced by its context
 * and `+` lines. Line numbers play no part: the hunk's lines place it.
 */
export function applyDiff(text: string, block: Block): string {
  const hunks: string[][] = [];
  for (const line of block.lines) {
    if (line.startsWith("@@")) hunks.push([]);
    else if (!hunks.length) throw new Error(`${where(block)}: a diff block starts with an '@@ <key> @@' line`);
    else hunks[hunks.length - 1].push(line);
  }
  let lines = text.split("\n");
  for (const [i, hunk] of hunks.entries()) {
    const before = hunk.filter((l) => !l.startsWith("+")).map((l) => l.slice(1));
    const after = hunk.filter((l) => !l.startsWith("-")).map((l) => l.slice(1));
    const at = lines.flatMap((_, start) => (before.every((l, j) => lines[start + j] === l) ? [start] : []));
    if (at.length !== 1) {
      const hunk = `hunk ${i + 1} (${before[0]?.trim()} ...)`;
      throw new Error(`${where(block)}: ${hunk} is found ${at.length} times in the file, not once`);
    }
    lines = [...lines.slice(0, at[0]), ...after, ...lines.slice(at[0] + before.length)];
  }
  return lines.join("\n");
}

/** Pulumi commands that act on a stack name it: pasted elsewhere, one without `--stack` acts on whichever is selected. */
export function pulumiWithoutStack(block: Block): string[] {
  return block.lines
    .map((l) => l.trim())
    .filter(
      (l) =>
        /^pulumi (config (set|get|rm)|preview|up|refresh|destroy|stack output)\b/.test(l) && !/--stack \S+/.test(l),
    );
}

/** Diagram kinds a Markdown viewer draws from a mermaid block. */
export const DIAGRAMS = /^(flowchart|graph) (LR|RL|TD|TB|BT)$/;

export const where = (block: Block) => `${block.file}:${block.line}`;

/** The blocks of a page's section, from its `## ` heading to the next. */
export function sectionBlocks(text: string, blocks: Block[], heading: string): Block[] {
  const lines = text.split("\n");
  const start = lines.findIndex((l) => l === heading);
  if (start < 0) throw new Error(`${blocks[0]?.file ?? "the page"} has no section '${heading}'`);
  const next = lines.findIndex((l, i) => i > start && l.startsWith("## "));
  return blocks.filter((b) => b.line > start && (next < 0 || b.line < next));
}
