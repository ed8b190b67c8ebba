// What Pi's RpcClient starts as its CLI (`node shim.mjs --mode rpc
// --provider P --model M ARGS...`): etch's `etch rpc` with the same
// flags, its pipes passed through, so the client talks to etch exactly
// as it talks to Pi. ETCH names the binary.
import { spawn } from "node:child_process";

const args = process.argv.slice(2);
const at = args.indexOf("--mode");
if (at >= 0) {
  if (args[at + 1] !== "rpc") {
    process.stderr.write(`shim: only --mode rpc is served, not ${args[at + 1]}\n`);
    process.exit(2);
  }
  args.splice(at, 2);
}
const child = spawn(process.env.ETCH, ["rpc", ...args], { stdio: "inherit" });
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("exit", (code, signal) => {
  process.exit(code ?? (signal ? 128 : 1));
});
