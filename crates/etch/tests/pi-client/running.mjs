// Drives `etch rpc` with Pi's own RpcClient (through shim.mjs) while a
// run is active, the way a Pi user's script steers one: a prompt whose
// answer the fake server holds (until the file GATE exists), then, while
// it streams, a steer with an image, a follow-up, a model and a thinking
// level for the next request; then the gate is opened and the run waited
// for; then a prompt with an image. Prints what each call gave as one JSON object.
//
// Usage: node running.mjs WORKSPACE GATE IMAGE_BASE64 ETCH_ARGS...
import { RpcClient } from "@mariozechner/pi-coding-agent";
import { ended, within } from "./wait.mjs";
import { fileURLToPath } from "node:url";
import { writeFileSync } from "node:fs";
import path from "node:path";

const [cwd, gate, image, ...extra] = process.argv.slice(2);
const here = path.dirname(fileURLToPath(import.meta.url));
const client = new RpcClient({
  cliPath: path.join(here, "shim.mjs"),
  cwd,
  provider: "openai",
  model: "m1",
  args: extra,
});
const seen = { calls: {}, errors: {}, ms: {} };
const call = async (name, fn) => {
  const start = Date.now();
  try {
    seen.calls[name] = (await fn()) ?? null;
  } catch (e) {
    seen.errors[name] = String(e?.message ?? e);
  }
  seen.ms[name] = Date.now() - start;
};
try {
  await client.start();
  const streaming = new Promise((resolve) => {
    const off = client.onEvent((event) => {
      if (event.type === "message_update") {
        off();
        resolve();
      }
    });
  });
  await call("prompt", () => client.prompt("hold on"));
  await streaming;
  await call("stateWhileRunning", async () => (await client.getState()).isStreaming);
  const png = { type: "image", data: image, mimeType: "image/png" };
  await call("steer", () => client.steer("steered while running", [png]));
  await call("followUp", () => client.followUp("followed up while running"));
  await call("setModel", () => client.setModel("openai", "m2"));
  await call("setThinkingLevel", () => client.setThinkingLevel("low"));
  writeFileSync(gate, "");
  // The held answer, then the steer's and the follow-up's, with no idle
  // moment between them: asked until the session is idle.
  await call("idle", async () => {
    const deadline = Date.now() + 30000;
    while ((await client.getState()).isStreaming) {
      if (Date.now() > deadline) throw new Error("still streaming after 30 s");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return true;
  });
  await call("lastText", () => client.getLastAssistantText());
  await call("stateAfter", () => client.getState());
  await call("promptWithImage", async () => {
    const end = ended(client);
    await client.prompt("what is this?", [png]);
    await within(end, 30000);
    return client.getLastAssistantText();
  });
} catch (e) {
  seen.fatal = String(e?.message ?? e);
} finally {
  seen.stderr = client.getStderr().slice(-2000);
  await client.stop();
}
process.stdout.write(JSON.stringify(seen) + "\n");
