//! The bridge process's loop: etch's plugin protocol (JSONL-RPC 0.1.0,
//! one request at a time) on stdin and stdout, MCP towards the server.
//! The server is reached while etch waits for `initialize`, which is
//! answered with the server's tools or with why they are not there;
//! `tool.execute` becomes `tools/call` under the configured timeout.
//! When stdin closes, the server is shut down and the bridge exits.

use std::collections::HashMap;
use std::time::Duration;

use etch_protocol::plugin::{
    ExecuteParams, INITIALIZE, InitializeResult, PluginError, PluginRequest, PluginResponse,
    TOOL_EXECUTE,
};
use rmcp::model::CallToolRequestParams;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::connect::{Service, StderrTail, connect};
use crate::convert;
use crate::error::McpError;
use crate::names::tool_names;
use crate::spec::ServerSpec;

/// A connected server and its offered tools.
struct Ready {
    /// The MCP session.
    service: Service,
    /// etch name → the server's own tool name.
    tools: HashMap<String, String>,
}

/// Serves `spec`'s server over this process's stdio until etch closes
/// stdin; the exit code for the process.
pub async fn serve(spec: ServerSpec) -> Result<i32, McpError> {
    let timeout = Duration::from_secs(spec.timeout_seconds.max(1));
    let tail = StderrTail::default();
    // Connecting starts now, not when initialize arrives.
    let starting = {
        let spec = spec.clone();
        let tail = tail.clone();
        tokio::spawn(async move { start(&spec, &tail, timeout).await })
    };
    let mut starting = Some(starting);
    let mut ready: Option<Ready> = None;
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = tokio::io::stdout();
    let mut code = 0;
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let request: PluginRequest = match serde_json::from_str(&line) {
            Ok(request) => request,
            Err(err) => {
                let id = serde_json::from_str::<Value>(&line)
                    .ok()
                    .and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_owned));
                let answer = failure(
                    id,
                    format!("the MCP bridge cannot read this request: {err}"),
                );
                write(&mut stdout, &answer).await?;
                continue;
            }
        };
        let answer = match request.method.as_str() {
            INITIALIZE => {
                let started = match starting.take() {
                    Some(task) => task
                        .await
                        .unwrap_or_else(|e| Err(format!("its start-up task failed: {e}"))),
                    None => Err("initialize was sent twice".to_owned()),
                };
                match started {
                    Ok((server, result)) => {
                        ready = Some(server);
                        success(
                            request.id,
                            serde_json::to_value(result).unwrap_or(Value::Null),
                        )
                    }
                    Err(why) => {
                        code = 1;
                        let answer = failure(Some(request.id), why);
                        write(&mut stdout, &answer).await?;
                        break;
                    }
                }
            }
            TOOL_EXECUTE => match &ready {
                None => failure(
                    Some(request.id),
                    "tool.execute before initialize".to_owned(),
                ),
                Some(server) => {
                    let (answer, alive) = execute(server, &spec, request, timeout, &tail).await;
                    if !alive {
                        write(&mut stdout, &answer).await?;
                        code = 1;
                        break;
                    }
                    answer
                }
            },
            other => failure(
                Some(request.id),
                format!("the MCP bridge has no method {other:?}"),
            ),
        };
        write(&mut stdout, &answer).await?;
    }
    if let Some(task) = starting {
        task.abort();
    }
    if let Some(server) = ready {
        // Closing the session closes a stdio server's stdin (or ends an
        // HTTP session); one that lingers is killed.
        let _ = tokio::time::timeout(Duration::from_millis(500), server.service.cancel()).await;
    }
    tail.kill();
    Ok(code)
}

/// Connects, initializes and lists the tools, within `timeout`.
async fn start(
    spec: &ServerSpec,
    tail: &StderrTail,
    timeout: Duration,
) -> Result<(Ready, InitializeResult), String> {
    let work = async {
        let service = connect(spec, tail).await?;
        // From here on, its slips explain failures; before, `connect`
        // did.
        let listed = service.list_all_tools().await.map_err(|e| {
            tail.explain(format!(
                "tools/list failed: {}",
                crate::connect::http_error(&e.to_string())
            ))
        })?;
        Ok::<_, String>((service, listed))
    };
    let (service, listed) = match tokio::time::timeout(timeout, work).await {
        Ok(done) => done?,
        Err(_) => {
            return Err(tail.explain(format!(
                "did not finish starting (connect, initialize, tools/list) within {} s; raise timeout_seconds if it needs longer",
                timeout.as_secs()
            )));
        }
    };
    let server_name = service
        .peer_info()
        .and_then(|info| info.server_info.clone())
        .map(|info| format!("{} {}", info.name, info.version))
        .unwrap_or_default();
    let raw: Vec<Value> = listed
        .iter()
        .filter(|t| spec.offers(&t.name))
        .filter_map(|t| serde_json::to_value(t).ok())
        .collect();
    let own: Vec<String> = raw
        .iter()
        .map(|t| {
            t.get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    let names = tool_names(&spec.name, &own);
    let mut map = HashMap::new();
    let mut tools = Vec::new();
    for ((name, own), tool) in names.into_iter().zip(own).zip(&raw) {
        // A name that had to change says what the server calls it, for
        // the model and for whoever reads `etch mcp check`.
        let renamed = name != format!("mcp__{}__{own}", spec.name);
        if map.insert(name.clone(), own.clone()).is_none() {
            let mut tool = convert::tool(name, tool);
            if renamed {
                tool.description = format!("(MCP tool {own:?}) {}", tool.description);
            }
            tools.push(tool);
        }
    }
    Ok((
        Ready {
            service,
            tools: map,
        },
        InitializeResult {
            name: server_name,
            tools,
        },
    ))
}

/// Runs one `tool.execute`; the answer, and whether the server is still
/// there.
async fn execute(
    server: &Ready,
    spec: &ServerSpec,
    request: PluginRequest,
    timeout: Duration,
    tail: &StderrTail,
) -> (PluginResponse, bool) {
    let params: ExecuteParams = match serde_json::from_value(request.params) {
        Ok(params) => params,
        Err(err) => {
            return (
                failure(
                    Some(request.id),
                    format!("bad tool.execute parameters: {err}"),
                ),
                true,
            );
        }
    };
    let Some(own) = server.tools.get(&params.name) else {
        return (
            failure(
                Some(request.id),
                format!("MCP server {} has no tool {}", spec.name, params.name),
            ),
            true,
        );
    };
    let mut call = CallToolRequestParams::new(own.clone());
    if let Value::Object(arguments) = params.arguments {
        call = call.with_arguments(arguments);
    }
    match tokio::time::timeout(timeout, server.service.call_tool(call)).await {
        Err(_) => (
            failure(
                Some(request.id),
                format!(
                    "MCP server {}: tool {own} did not answer within {} s (the call was cancelled; raise timeout_seconds if it needs longer)",
                    spec.name,
                    timeout.as_secs()
                ),
            ),
            true,
        ),
        Ok(Ok(result)) => {
            let value = serde_json::to_value(&result).unwrap_or(Value::Null);
            let result = convert::result(&value);
            (
                success(
                    request.id,
                    serde_json::to_value(result).unwrap_or(Value::Null),
                ),
                true,
            )
        }
        Ok(Err(err)) => {
            let text = err.to_string();
            let closed = text.contains("Transport closed") || text.contains("connection closed");
            if closed {
                tail.reap().await;
            }
            let why = match (&spec.transport, closed) {
                (crate::Transport::Stdio { .. }, true) => tail.explain(format!(
                    "MCP server {} closed the connection during {own}; its tools are no longer available",
                    spec.name
                )),
                (crate::Transport::Http { url, .. }, true) => format!(
                    "MCP server {}: the connection to {url} dropped during {own}, before its answer came; its tools are no longer available this session",
                    spec.name
                ),
                (_, false) => {
                    format!(
                        "MCP server {}: {own} failed: {}",
                        spec.name,
                        crate::connect::http_error(&text)
                    )
                }
            };
            (failure(Some(request.id), why), !closed)
        }
    }
}

/// A `result` answer.
fn success(id: String, result: Value) -> PluginResponse {
    PluginResponse {
        id: Some(id),
        result: Some(result),
        error: None,
    }
}

/// An `error` answer.
fn failure(id: Option<String>, message: String) -> PluginResponse {
    PluginResponse {
        id,
        result: None,
        error: Some(PluginError { message }),
    }
}

/// Writes one answer line.
async fn write(stdout: &mut tokio::io::Stdout, answer: &PluginResponse) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(answer).unwrap_or_default();
    line.push(b'\n');
    stdout.write_all(&line).await?;
    stdout.flush().await
}
