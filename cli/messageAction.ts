/** `hub-export discard` and `hub-export retry`: one definition, two actions on a message that runs no longer retry (operate/messages.ts). */
import { defineCommand } from "./command";
import { UsageError } from "../core/errors";
import { schemaOnly } from "../core/naming";
import { loadFromOptions } from "./stackOptions";
import { changeMessage, formatMessageAction, type MessageAction } from "../operate/messages";
import { DATABASE_DETAILS, operatorAction, operatorActor, operatorOptions } from "./database";
import { UUID } from "../core/uuid";
import { cut } from "../core/redact";

export function messageActionCommand(
  action: MessageAction,
  text: { summary: string; detail: string; reasonExample: string; does: string; exit1: string },
) {
  const name = action.toLowerCase();
  return defineCommand({
    summary: text.summary,
    options: {
      "message-id": {
        type: "string",
        value: "ID",
        required: true,
        description: "The message (its messageId, as 'hub-export status' lists it)",
        example: "--message-id 9f0c6a4e-1d2b-4c3a-8e7f-000000000012",
      },
      ...operatorOptions(text.reasonExample),
    },
    details: [
      DATABASE_DETAILS,
      `${text.detail} It runs in one transaction holding the client's run lock: it refuses while a run works, and while a stopped run waits to be resumed. Each one is a ${action} row in HUB_EXPORT_RUN_HISTORY.`,
    ],
    examples: [
      {
        command: `npx hub-export ${name} --stack qa --message-id 9f0c6a4e-1d2b-4c3a-8e7f-000000000012 --reason ${text.reasonExample.replace(/^--reason /, "")}`,
        does: text.does,
      },
    ],
    exitCodes: { 1: text.exit1 },
    async run(values, io) {
      const id = values["message-id"];
      if (!id) throw new UsageError("--message-id is required: the messageId that 'hub-export status' lists");
      if (!UUID.test(id)) throw new UsageError(`--message-id must be a messageId (a UUID), got '${cut(id)}'`);
      const config = loadFromOptions(values);
      return operatorAction(
        name,
        values,
        config,
        io,
        (client) =>
          changeMessage(client, action, {
            stagingSchema: schemaOnly(config.stagingSchema),
            clientName: config.clientName,
            jobName: config.jobName,
            messageId: id.toLowerCase(),
            actor: operatorActor(values),
            reason: values.reason,
            setAsideAfterRuns: config.parameters.set_aside_after_runs,
          }),
        formatMessageAction,
      );
    },
  });
}
