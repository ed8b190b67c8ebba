// Makes a Pi session tree with the real Pi (its SDK, as its terminal
// does it) for etch's import tests: two prompts, a return to before the
// second with the abandoned branch summarized, a label on the first
// prompt, and a prompt on the new branch. Pi's session file is left in
// the agent directory.
//
// Usage: node tree.mjs WORKSPACE AGENT_DIR   (settings.json there names
// the model)
import { createAgentSession } from "@mariozechner/pi-coding-agent";

const [cwd, agentDir] = process.argv.slice(2);
const { session } = await createAgentSession({ cwd, agentDir });
await session.prompt("first question");
await session.prompt("second question");
const users = session.getUserMessagesForForking();
const back = await session.navigateTree(users[1].entryId, { summarize: true });
if (back.cancelled || !back.summaryEntry) {
  throw new Error("Pi did not summarize the branch it left");
}
session.sessionManager.appendLabelChange(users[0].entryId, "start");
await session.prompt("second, differently");
session.dispose?.();
process.stdout.write(JSON.stringify({ file: session.sessionManager.getSessionFile() }) + "\n");
