/**
 * What the machine or the database refused is a user error naming the thing and what to do (core/refusals.ts); an
 * error of our own code stays a bug. The errors are real ones: a write to /dev/full, a binary that does not exist, a
 * refused connection, statements the database refuses.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import net from "node:net";
import { spawnSync } from "node:child_process";
import { Client } from "pg";
import { asUserError, databaseRefusal, onFile, systemRefusal } from "../../core/refusals";
import { UserError } from "../../core/errors";
import { refusal } from "../../providers/refusal";
import { executeCommand, defineCommand } from "../../cli/command";
import { createTestDatabase } from "../support/database";

/** The error `work` throws. */
function thrown(work: () => unknown): Error {
  try {
    work();
  } catch (err) {
    return err as Error;
  }
  throw new Error("it did not throw");
}

describe("the machine's refusals", () => {
  it("a full disk: free space in the file's folder", () => {
    const err = thrown(() => onFile("/dev/full", () => fs.writeFileSync("/dev/full", "x")));
    expect(systemRefusal(err)).toBe(
      "write /dev/full: no space left on the device: free space in /dev (the data written so far is kept), then run again",
    );
  });

  it("a missing binary: named, with how to get it", () => {
    const err = spawnSync("hub-export-no-such-binary", []).error!;
    expect(systemRefusal(err)).toMatch(
      /^cannot run hub-export-no-such-binary: it is not installed or not on the PATH \(ENOENT\)/,
    );
  });

  it("a refused connection: the address, and to check the server", async () => {
    const port = await new Promise<number>((resolve) => {
      const srv = net.createServer().listen(0, "127.0.0.1", () => {
        const p = (srv.address() as net.AddressInfo).port;
        srv.close(() => resolve(p));
      });
    });
    const client = new Client({ host: "127.0.0.1", port, user: "x", database: "x" });
    const err = await client.connect().then(
      () => new Error("connected"),
      (e: Error) => e,
    );
    expect(asUserError(err)?.message).toBe(
      `cannot reach 127.0.0.1:${port} (ECONNREFUSED): check that it runs and accepts connections from here, then run again`,
    );
  });

  it("our own mistakes stay bugs", () => {
    expect(asUserError(new TypeError("x is not a function"))).toBeUndefined();
    expect(asUserError(thrown(() => JSON.parse("{")))).toBeUndefined();
  });

  it("a provider's refusal (an Error named UserError) is a user error with its lines", () => {
    expect(asUserError(refusal("one\ntwo"))?.lines).toEqual(["one", "two"]);
  });

  it("the CLI: exit 1 with the line, not exit 70 with a stack trace", async () => {
    let stderr = "";
    const io = {
      stdout: { write: () => true },
      stderr: { write: (s: string) => ((stderr += s), true) },
      stdin: process.stdin,
    } as never;
    const command = defineCommand({
      summary: "s",
      options: {},
      run: async () => onFile("/dev/full", () => fs.writeFileSync("/dev/full", "x")) as never,
    });
    expect(await executeCommand("x", command, [], io)).toBe(1);
    expect(stderr).toBe(
      "write /dev/full: no space left on the device: free space in /dev (the data written so far is kept), then run again\n",
    );
  });
});

describe("the database's refusals", () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let client: Client;
  beforeAll(async () => {
    db = await createTestDatabase("refusals");
    client = new Client({ connectionString: db.url });
    await client.connect();
    await client.query("CREATE TABLE shared (id int PRIMARY KEY, extra text NOT NULL)");
  });
  afterAll(async () => {
    await client?.end();
    await db?.drop();
  });
  const refused = (sql: string) =>
    client.query(sql).then(
      () => new Error("accepted"),
      (e: Error) => e,
    );

  it("a NOT NULL column another team added: the table, the column, and the fix", async () => {
    const line = databaseRefusal(await refused("INSERT INTO shared (id) VALUES (1)"));
    expect(line).toMatch(
      /^the database refused: null value in column "extra" of relation "shared" violates not-null constraint \(SQLSTATE 23502; table public\.shared, column extra\): /,
    );
    expect(line).toContain("give it a default or drop its NOT NULL");
  });

  it("a column of another type or a missing one: put it back as the baseline defines it", async () => {
    expect(databaseRefusal(await refused("SELECT missing FROM shared"))).toMatch(
      /\(SQLSTATE 42703\): a table the project shares has other columns or types/,
    );
  });

  it("a statement we got wrong stays a bug", async () => {
    expect(databaseRefusal(await refused("SELEC 1"))).toBeUndefined();
    expect(asUserError(await refused("SELEC 1"))).toBeUndefined();
  });

  it("a provider's wrapped database error is the user's when the database refused", async () => {
    const cause = await refused("INSERT INTO shared (id) VALUES (1)");
    expect(asUserError(new Error("upsert into public.shared (id=1) failed: null value ...", { cause }))).toBeInstanceOf(
      UserError,
    );
    expect(
      asUserError(new Error("applying failed: syntax error", { cause: await refused("SELEC 1") })),
    ).toBeUndefined();
  });
});
