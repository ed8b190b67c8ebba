// An editor in a few lines: the official ACP client library
// (@agentclientprotocol/sdk) starts `etch acp`, runs one scenario and
// prints what it saw as one JSON object on stdout. The library checks
// every message etch sends against the protocol's schema, so a
// malformed update fails the scenario.
//
//   node client.mjs SCENARIO CWD ETCH [ETCH_ARGS...]
//
// Scenarios:
//   prompt   initialize, session/new (mcpServers from ACP_MCP_SERVERS,
//            JSON), one prompt (ACP_PROMPT); permission requests are
//            answered with ACP_PERMISSION (an optionId)
//   cancel   like prompt, but session/cancel at the first answer chunk
//   load     initialize, session/load of ACP_SESSION
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream } from "@agentclientprotocol/sdk";

const [scenario, cwd, etch, ...args] = process.argv.slice(2);
const child = spawn(etch, ["acp", ...args], {
  cwd,
  stdio: ["pipe", "pipe", "inherit"],
});
const seen = { updates: [], permissions: [] };
const app = client({ name: "etch-test" })
  .onRequest("session/request_permission", ({ params }) => {
    seen.permissions.push(params);
    return {
      outcome: {
        outcome: "selected",
        optionId: process.env.ACP_PERMISSION ?? "allow_once",
      },
    };
  })
  .onNotification("session/update", ({ params }) => {
    seen.updates.push(params.update);
  });
const stream = ndJsonStream(
  Writable.toWeb(child.stdin),
  Readable.toWeb(child.stdout),
);
const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
try {
  await app.connectWith(stream, async (ctx) => {
    seen.initialize = await ctx.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: {},
    });
    if (scenario === "load") {
      seen.load = await ctx.request("session/load", {
        sessionId: process.env.ACP_SESSION,
        cwd,
        mcpServers: [],
      });
      return;
    }
    const created = await ctx.request("session/new", {
      cwd,
      mcpServers: JSON.parse(process.env.ACP_MCP_SERVERS ?? "[]"),
    });
    seen.session = created;
    const prompt = ctx.request("session/prompt", {
      sessionId: created.sessionId,
      prompt: [{ type: "text", text: process.env.ACP_PROMPT ?? "hello" }],
    });
    if (scenario === "cancel") {
      while (!seen.updates.some((u) => u.sessionUpdate === "agent_message_chunk")) {
        await new Promise((r) => setTimeout(r, 10));
      }
      await ctx.notify("session/cancel", { sessionId: created.sessionId });
    }
    seen.prompt = await prompt;
  });
} catch (error) {
  seen.error = String(error?.message ?? error);
}
child.stdin.end();
seen.exit = await exited;
process.stdout.write(JSON.stringify(seen) + "\n");
