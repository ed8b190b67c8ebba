//! The bridge process's loop: etch's plugin protocol (JSONL-RPC 0.1.0,
//! one request at a time) on stdin and stdout, MCP towards the server.
//! The server is reached while etch waits for `initialize`, which is
//! answered with the server's tools or, as a fatal error, with why they
//! are not there; `tool.execute` becomes `tools/call` under the
//! configured timeout. A server that goes away is a fatal answer too, so
//! etch withdraws its tools at once. When stdin closes, the server is
//! shut down and the bridge exits.
//!
//! This module must not know how etch supervises plugins or what the
//! configuration file looks like: it gets a [`ServerSpec`].

use std::collections::HashMap;
use std::time::Duration;

use etch_protocol::plugin::{
    ExecuteParams, INITIALIZE, InitializeResult, PluginError, PluginRequest, PluginResponse,
    TOOL_EXECUTE,
};
use rmcp::ServiceError;
use rmcp::model::{CallToolRequestParams, ClientRequest, CustomRequest};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::connect::{Service, Traces, connect, service_error};
use crate::convert;
use crate::error::McpError;
use crate::names::tool_names;
use crate::spec::{ServerSpec, Transport};

/// Most `tools/list` pages read from one server.
const MAX_PAGES: usize = 100;

/// A connected server and its offered tools.
struct Ready {
    /// The MCP session.
    service: Service,
    /// etch name → the server's own tool name.
    tools: HashMap<String, String>,
}

/// Serves `spec`'s server over this process's stdio until etch closes
/// stdin; the exit code for the process. The server is shut down on
/// every way out.
pub async fn serve(spec: ServerSpec) -> Result<i32, McpError> {
    let traces = Traces::default();
    let mut ready = None;
    let served = exchange(&spec, &traces, &mut ready).await;
    if let Some(server) = ready {
        // Closing the session closes a stdio server's stdin (or ends an
        // HTTP session); one that lingers is killed.
        let _ = tokio::time::timeout(Duration::from_millis(500), server.service.cancel()).await;
    }
    traces.kill();
    served
}

/// The request loop; `ready` holds the server once it is up, so that
/// [`serve`] can shut it down whatever happened here.
async fn exchange(
    spec: &ServerSpec,
    traces: &Traces,
    ready: &mut Option<Ready>,
) -> Result<i32, McpError> {
    let timeout = Duration::from_secs(spec.timeout_seconds.max(1));
    // Connecting starts now, not when initialize arrives.
    let mut starting = Some({
        let spec = spec.clone();
        let traces = traces.clone();
        tokio::spawn(async move { start(&spec, &traces, timeout).await })
    });
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = tokio::io::stdout();
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
                let message = format!("the MCP bridge cannot read this request: {err}");
                write(&mut stdout, &failure(id, message, false)).await?;
                continue;
            }
        };
        let (answer, fatal) = match request.method.as_str() {
            INITIALIZE => {
                let started = match starting.take() {
                    Some(task) => task
                        .await
                        .unwrap_or_else(|e| Err(format!("its start-up task failed: {e}"))),
                    None => Err("initialize was sent twice".to_owned()),
                };
                match started {
                    Ok((server, result)) => {
                        *ready = Some(server);
                        let result = serde_json::to_value(result).unwrap_or(Value::Null);
                        (success(request.id, result), false)
                    }
                    Err(why) => (failure(Some(request.id), why, true), true),
                }
            }
            TOOL_EXECUTE => match ready.as_ref() {
                None => {
                    let why = "tool.execute before initialize".to_owned();
                    (failure(Some(request.id), why, false), false)
                }
                Some(server) => execute(server, spec, request, timeout, traces).await,
            },
            other => {
                let why = format!("the MCP bridge has no method {other:?}");
                (failure(Some(request.id), why, false), false)
            }
        };
        write(&mut stdout, &answer).await?;
        if fatal {
            if let Some(task) = starting {
                task.abort();
            }
            return Ok(1);
        }
    }
    if let Some(task) = starting {
        task.abort();
    }
    Ok(0)
}

/// Connects, initializes and lists the tools, within `timeout`.
async fn start(
    spec: &ServerSpec,
    traces: &Traces,
    timeout: Duration,
) -> Result<(Ready, InitializeResult), String> {
    let work = async {
        let service = connect(spec, traces).await?;
        let listed = list_tools(&service).await.map_err(|e| {
            traces.explain(format!(
                "tools/list failed: {}",
                service_error(&spec.transport, &e)
            ))
        })?;
        Ok::<_, String>((service, listed))
    };
    let (service, listed) = match tokio::time::timeout(timeout, work).await {
        Ok(done) => done?,
        Err(_) => {
            return Err(traces.explain(format!(
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
    let raw: Vec<&Value> = listed
        .iter()
        .filter(|t| {
            t.get("name")
                .and_then(Value::as_str)
                .is_some_and(|name| spec.offers(name))
        })
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
    for ((name, own), tool) in names.into_iter().zip(own).zip(raw) {
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

/// Every page of `tools/list`, each tool as the server sent it. Asked
/// as a raw request so that one tool rmcp's types refuse (an
/// `inputSchema` that is not an object) costs only that tool, which
/// etch then rejects by name, not the whole list.
async fn list_tools(service: &Service) -> Result<Vec<Value>, ServiceError> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
        let request = ClientRequest::CustomRequest(CustomRequest::new("tools/list", params));
        let result = service.send_request(request).await?;
        let value = serde_json::to_value(&result).unwrap_or(Value::Null);
        if let Some(list) = value.get("tools").and_then(Value::as_array) {
            tools.extend(list.iter().cloned());
        }
        cursor = value
            .get("nextCursor")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    Ok(tools)
}

/// Runs one `tool.execute`; the answer, and whether it is fatal (the
/// server is gone).
async fn execute(
    server: &Ready,
    spec: &ServerSpec,
    request: PluginRequest,
    timeout: Duration,
    traces: &Traces,
) -> (PluginResponse, bool) {
    let id = request.id;
    let params: ExecuteParams = match serde_json::from_value(request.params) {
        Ok(params) => params,
        Err(err) => {
            let why = format!("bad tool.execute parameters: {err}");
            return (failure(Some(id), why, false), false);
        }
    };
    let Some(own) = server.tools.get(&params.name) else {
        let why = format!("MCP server {} has no tool {}", spec.name, params.name);
        return (failure(Some(id), why, false), false);
    };
    let mut call = CallToolRequestParams::new(own.clone());
    if let Value::Object(arguments) = params.arguments {
        call = call.with_arguments(arguments);
    }
    let err = match tokio::time::timeout(timeout, server.service.call_tool(call)).await {
        Ok(Ok(result)) => {
            let value = serde_json::to_value(&result).unwrap_or(Value::Null);
            let result = serde_json::to_value(convert::result(&value)).unwrap_or(Value::Null);
            return (success(id, result), false);
        }
        Ok(Err(err)) => err,
        Err(_) => {
            // Dropping the call sent the server a cancellation.
            let why = format!(
                "MCP server {}: tool {own} did not answer within {} s (the call was cancelled; raise timeout_seconds if it needs longer)",
                spec.name,
                timeout.as_secs()
            );
            return (failure(Some(id), why, false), false);
        }
    };
    let gone = matches!(
        err,
        ServiceError::TransportClosed | ServiceError::TransportSend(_)
    );
    let why = match (&spec.transport, gone) {
        (Transport::Stdio { .. }, true) => {
            traces.reap().await;
            traces.explain(format!("closed the connection during {own}"))
        }
        (Transport::Http { url, .. }, true) => {
            format!("the connection to {url} dropped during {own}, before its answer came")
        }
        (_, false) => format!(
            "MCP server {}: {own} failed: {}",
            spec.name,
            service_error(&spec.transport, &err)
        ),
    };
    (failure(Some(id), why, gone), gone)
}

/// A `result` answer.
fn success(id: String, result: Value) -> PluginResponse {
    PluginResponse {
        id: Some(id),
        result: Some(result),
        error: None,
    }
}

/// An `error` answer; a `fatal` one makes etch stop the bridge and
/// withdraw its tools.
fn failure(id: Option<String>, message: String, fatal: bool) -> PluginResponse {
    PluginResponse {
        id,
        result: None,
        error: Some(PluginError { message, fatal }),
    }
}

/// Writes one answer line.
async fn write(stdout: &mut tokio::io::Stdout, answer: &PluginResponse) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(answer).unwrap_or_default();
    line.push(b'\n');
    stdout.write_all(&line).await?;
    stdout.flush().await
}
