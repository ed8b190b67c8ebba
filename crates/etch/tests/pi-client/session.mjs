// Makes a Pi session with the real Pi (its RPC mode, driven by its own
// RpcClient) for etch's import tests: a prompt with an image, an answer,
// and a compaction with a focus. Pi's session file is left in
// PI_CODING_AGENT_DIR as Pi writes it.
//
// Usage: node session.mjs WORKSPACE IMAGE.png   (PI_CODING_AGENT_DIR set)
import { RpcClient } from "@mariozechner/pi-coding-agent";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const [cwd, image] = process.argv.slice(2);
const here = path.dirname(fileURLToPath(import.meta.url));
const client = new RpcClient({
  cliPath: path.join(here, "node_modules/@mariozechner/pi-coding-agent/dist/cli.js"),
  cwd,
  provider: "fake",
  model: "m1",
});
const data = readFileSync(image).toString("base64");
await client.start();
try {
  await client.promptAndWait("what is in this picture?", [{ type: "image", data, mimeType: "image/png" }], 30000);
  await client.promptAndWait("and the colours?", undefined, 30000);
  const compacted = await client.compact("keep the picture's description");
  process.stdout.write(JSON.stringify({ firstKeptEntryId: compacted.firstKeptEntryId }) + "\n");
} finally {
  await client.stop();
}
