"""A local OpenAI-compatible server for the whole-process benchmarks
(bench/agent.sh, bench/rpc.sh): it answers at once, so the figures are
etch's own cost. The first path segment picks the scenario: `text` (one
short answer), `rounds-N` (N bash tool rounds, then an answer),
`ls-rounds-N` (N rounds of the in-process `ls` tool, so a round costs
little but etch itself), `plugin-rounds-N` (N calls of the example
plugin's `plugin_echo`), `mcp-rounds-N` (N calls of server-everything's
`echo` through etch's MCP bridge), `read-PATH` (one `read` of PATH,
then an answer), `task-N` and `slowtask-N` (N `task`
calls of the `bench` subagent profile, whose requests carry model
`child` and are answered at once, or after 200 ms), `big` (512 KB of
streamed text), `paced` (20 short pieces 10 ms apart: a model that
takes its time, as real ones do). Prints the port
it listens on."""
import json, sys, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

def chunk(delta, finish=None):
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        scenario = self.path.split("/")[1]
        frames = []
        if "task-" in scenario and body.get("model") == "child":
            if scenario.startswith("slow"):
                time.sleep(0.2)
            frames.append(chunk({"content": "child done"}))
            frames.append(chunk({}, "stop"))
        elif "task-" in scenario:
            wanted = int(scenario.split("-")[-1])
            if not any(m["role"] == "tool" for m in body["messages"]):
                for i in range(wanted):
                    frames.append(chunk({"tool_calls": [{"index": i, "id": f"task_{i}", "type": "function",
                        "function": {"name": "task", "arguments": json.dumps({"profile": "bench", "task": f"job {i}"})}}]}))
                frames.append(chunk({}, "tool_calls"))
            else:
                frames.append(chunk({"content": "done"}))
                frames.append(chunk({}, "stop"))
        elif "rounds-" in scenario:
            wanted = int(scenario.split("-")[-1])
            done = sum(1 for m in body["messages"] if m["role"] == "tool")
            if done < wanted:
                # A different call each round: the loop's guard stops a run
                # that repeats the same call with the same result.
                if scenario.startswith("ls-"):
                    name, args = "ls", {"path": ".", "limit": 1000 + done}
                elif scenario.startswith("plugin-"):
                    name, args = "plugin_echo", {"text": f"hi {done}"}
                elif scenario.startswith("mcp-"):
                    name, args = "mcp__everything__echo", {"message": f"hi {done}"}
                else:
                    name, args = "bash", {"command": f"echo hi {done}"}
                frames.append(chunk({"tool_calls": [{"index": 0, "id": f"call_{done}", "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)}}]}))
                frames.append(chunk({}, "tool_calls"))
            else:
                frames.append(chunk({"content": "done"}))
                frames.append(chunk({}, "stop"))
        elif scenario.startswith("read-"):
            if not any(m["role"] == "tool" for m in body["messages"]):
                frames.append(chunk({"tool_calls": [{"index": 0, "id": "read_0", "type": "function",
                    "function": {"name": "read", "arguments": json.dumps({"path": scenario[5:]})}}]}))
                frames.append(chunk({}, "tool_calls"))
            else:
                frames.append(chunk({"content": "done"}))
                frames.append(chunk({}, "stop"))
        elif scenario == "paced":
            for i in range(20):
                frames.append(chunk({"content": f"word{i} "}))
            frames.append(chunk({}, "stop"))
        elif scenario == "big":
            piece = "x" * 8191 + "\n"
            for _ in range(64):
                frames.append(chunk({"content": piece}))
            frames.append(chunk({}, "stop"))
        else:
            frames.append(chunk({"content": "hello"}))
            frames.append(chunk({}, "stop"))
        frames.append({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}})
        data = b"".join(b"data: " + json.dumps(f).encode() + b"\n\n" for f in frames) + b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if scenario == "paced":
            for frame in frames:
                self.wfile.write(b"data: " + json.dumps(frame).encode() + b"\n\n")
                self.wfile.flush()
                time.sleep(0.01)
            self.wfile.write(b"data: [DONE]\n\n")
        else:
            self.wfile.write(data)

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
