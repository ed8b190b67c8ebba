// Drives `etch rpc` with Pi's own RpcClient (through shim.mjs) the way a
// Pi user's script does, and prints what each call gave as one JSON
// object; the Rust test checks it. A call that throws (etch answered
// success:false, or never answered) is recorded with its error.
//
// Usage: node client.mjs WORKSPACE ETCH_ARGS...   (ETCH names the binary)
import { RpcClient } from "@mariozechner/pi-coding-agent";
import { ended, within } from "./wait.mjs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const [cwd, ...extra] = process.argv.slice(2);
const here = path.dirname(fileURLToPath(import.meta.url));
const client = new RpcClient({
  cliPath: path.join(here, "shim.mjs"),
  cwd,
  provider: "openai",
  model: "m1",
  args: extra,
});
const seen = { calls: {}, errors: {}, events: [], ms: {} };
const call = async (name, fn) => {
  const start = Date.now();
  try {
    seen.calls[name] = (await fn()) ?? null;
  } catch (e) {
    seen.errors[name] = String(e?.message ?? e);
  }
  seen.ms[name] = Date.now() - start;
};
client.onEvent((event) => seen.events.push(event.type));
try {
  await client.start();
  await call("promptAndWait", async () => (await client.promptAndWait("count to three", undefined, 30000)).length);
  await call("getState", () => client.getState());
  await call("getMessages", () => client.getMessages());
  await call("getLastAssistantText", () => client.getLastAssistantText());
  await call("getForkMessages", () => client.getForkMessages());
  await call("setSessionName", () => client.setSessionName("pi client"));
  await call("setThinkingLevel", () => client.setThinkingLevel("high"));
  await call("cycleThinkingLevel", () => client.cycleThinkingLevel());
  await call("setSteeringMode", () => client.setSteeringMode("one-at-a-time"));
  await call("setFollowUpMode", () => client.setFollowUpMode("all"));
  await call("setAutoCompaction", () => client.setAutoCompaction(false));
  await call("getCommands", () => client.getCommands());
  await call("bash", () => client.bash("echo from-bash"));
  await call("abortBash", () => client.abortBash());
  await call("getSessionStats", () => client.getSessionStats());
  await call("exportHtml", () => client.exportHtml(path.join(cwd, "pi.html")));
  await call("clone", () => client.clone());
  await call("getForkMessagesAfterClone", () => client.getForkMessages());
  await call("newSession", () => client.newSession());
  await call("getAvailableModels", () => client.getAvailableModels());
  await call("setModel", () => client.setModel("openai", "m2"));
  await call("cycleModel", () => client.cycleModel());
  await call("abort", async () => {
    await client.prompt("wait here");
    await new Promise((resolve) => {
      const off = client.onEvent((event) => {
        if (event.type === "message_update") {
          off();
          resolve();
        }
      });
    });
    // Answered once the run has ended, as Pi answers it.
    await client.abort();
    return (await client.getState()).isStreaming === false;
  });
  await call("steer", async () => {
    const end = ended(client);
    await client.steer("steered while idle");
    await within(end, 30000);
    return client.getLastAssistantText();
  });
  await call("followUp", async () => {
    const end = ended(client);
    await client.followUp("followed up while idle");
    await within(end, 30000);
    return client.getLastAssistantText();
  });
  await call("fork", async () => {
    const messages = await client.getForkMessages();
    return client.fork(messages[0].entryId);
  });
  await call("switchSession", () => client.switchSession(seen.calls.getState?.sessionFile ?? ""));
  await call("setAutoRetry", () => client.setAutoRetry(false));
  await call("abortRetry", () => client.abortRetry());
  await call("compact", () => client.compact("keep the count"));
} catch (e) {
  seen.fatal = String(e?.message ?? e);
} finally {
  seen.stderr = client.getStderr().slice(-2000);
  await client.stop();
}
process.stdout.write(JSON.stringify(seen) + "\n");
