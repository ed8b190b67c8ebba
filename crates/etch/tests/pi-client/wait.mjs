// Waiting for a run's end with Pi's RpcClient, shared by the scripts.
//
// `ended(client)` listens for the next agent_end from the moment it is
// called: call it before sending the command that starts a run. Against
// a fake server that answers at once, the run can end in the same read
// as the command's response, before waitForIdle (which listens only from
// its own call) would hear it. `within(promise, ms)` fails after `ms`;
// its timer is unref'd, so one left behind never keeps node alive.
export const ended = (client) =>
  new Promise((resolve) => {
    const off = client.onEvent((event) => {
      if (event.type === "agent_end") {
        off();
        resolve();
      }
    });
  });

export const within = (promise, ms) =>
  Promise.race([
    promise,
    new Promise((_, reject) => setTimeout(() => reject(new Error(`no agent_end in ${ms} ms`)), ms).unref()),
  ]);
