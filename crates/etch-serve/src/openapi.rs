//! `GET /openapi.json`: the API's OpenAPI 3.1 description, generated
//! from the route table ([`Op::ALL`]) and the bodies' types (`api` and
//! `etch-protocol`, through `schemars`), never written by hand: a route
//! or a field added in code is in the description by construction.
//!
//! This module owns how operations are described; it must not know
//! what a route does.

use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

use crate::api;
use crate::routes::Op;

/// Where the component schemas live.
const COMPONENTS: &str = "/components/schemas";

/// The generators of one description: requests are described as they
/// are read, responses as they are written (an optional field is one a
/// client may leave out, or one the server may leave out). A type used
/// both ways must come out the same both ways.
struct Schemas {
    /// Request bodies.
    read: SchemaGenerator,
    /// Response bodies.
    written: SchemaGenerator,
}

impl Schemas {
    /// Fresh generators for OpenAPI 3.1 (JSON Schema 2020-12).
    fn new() -> Self {
        let settings = SchemaSettings::draft2020_12().with(|s| {
            s.definitions_path = COMPONENTS.into();
        });
        Self {
            read: settings.clone().for_deserialize().into_generator(),
            written: settings.for_serialize().into_generator(),
        }
    }

    /// The schema of request body `T`.
    fn request<T: JsonSchema>(&mut self) -> Value {
        self.read.subschema_for::<T>().to_value()
    }

    /// The schema of response body `T`.
    fn response<T: JsonSchema>(&mut self) -> Value {
        self.written.subschema_for::<T>().to_value()
    }

    /// Every component both generators defined, and the names of those
    /// they describe differently (read and written forms of one type;
    /// the written form is kept, and a test keeps this list empty).
    fn components(mut self) -> (Map<String, Value>, Vec<String>) {
        let mut all = self.written.take_definitions(true);
        let mut differ = Vec::new();
        for (name, read) in self.read.take_definitions(true) {
            match all.get(&name) {
                Some(written) if *written != read => differ.push(name),
                Some(_) => {}
                None => {
                    all.insert(name, read);
                }
            }
        }
        (all, differ)
    }
}

/// A JSON body with `schema`.
fn json_body(schema: Value) -> Value {
    let mut media = Map::new();
    media.insert("schema".to_owned(), schema);
    json!({"content": {"application/json": media}})
}

/// One response: `description`, with a JSON body when `schema` is given.
fn answer(description: &str, schema: Option<Value>) -> Value {
    let mut response = json!({"description": description});
    if let (Some(object), Some(schema)) = (response.as_object_mut(), schema) {
        object.extend(json_body(schema).as_object().cloned().unwrap_or_default());
    }
    response
}

/// What one operation is: summary, request body, parameters beyond
/// `{id}`, and its answers by status.
fn describe(op: Op, schemas: &mut Schemas) -> Value {
    let error = schemas.response::<api::ErrorBody>();
    let fail = |what: &str| answer(what, Some(error.clone()));
    let mut responses = Map::new();
    let mut add = |status: &str, value: Value| {
        responses.insert(status.to_owned(), value);
    };
    let mut request = None;
    let mut parameters = Vec::new();
    let summary = match op {
        Op::Health => {
            add(
                "200",
                answer(
                    "The server answers.",
                    Some(schemas.response::<api::Health>()),
                ),
            );
            "Whether the server answers (no token needed)."
        }
        Op::OpenApi => {
            add(
                "200",
                answer("This description.", Some(json!({"type": "object"}))),
            );
            "This API's OpenAPI 3.1 description."
        }
        Op::List => {
            add(
                "200",
                answer(
                    "The sessions.",
                    Some(schemas.response::<api::SessionList>()),
                ),
            );
            "The sessions of every served root, the one written last first, from the index."
        }
        Op::Create => {
            request = Some(schemas.request::<api::NewSession>());
            add(
                "201",
                answer("Created.", Some(schemas.response::<api::Created>())),
            );
            add("400", fail("Bad JSON, options or configuration."));
            add("403", fail("The cwd is not inside a served root."));
            "Creates a session."
        }
        Op::Prompt => {
            request = Some(schemas.request::<api::Prompt>());
            add(
                "202",
                answer(
                    "Taken; the run's events carry `commandId`.",
                    Some(schemas.response::<api::Accepted>()),
                ),
            );
            add(
                "409",
                fail(
                    "A run is active (send `streamingBehavior`), or another process holds the session.",
                ),
            );
            add(
                "429",
                fail("`max_running` runs are active; retry after `Retry-After` seconds."),
            );
            "Starts a run, or queues the text into the active one; answers at once."
        }
        Op::Commands => {
            request = Some(schemas.request::<etch_protocol::Command>());
            add(
                "200",
                answer(
                    "The response `etch rpc` gives (`success` false for a refused command).",
                    Some(schemas.response::<etch_protocol::Response>()),
                ),
            );
            add(
                "400",
                fail("Not a command, or one that would move this id to another session."),
            );
            add("409", fail("Another process holds the session."));
            add(
                "429",
                fail("A prompt, steer or follow-up would start a run beyond `max_running`."),
            );
            "Any `etch rpc` command, answered as `etch rpc` answers it."
        }
        Op::Name => {
            request = Some(schemas.request::<api::Name>());
            add(
                "200",
                answer(
                    "The name as stored.",
                    Some(schemas.response::<api::Named>()),
                ),
            );
            "Names the session."
        }
        Op::Messages => {
            add(
                "200",
                answer(
                    "The conversation at the leaf: what the next request would send.",
                    Some(schemas.response::<api::Messages>()),
                ),
            );
            "The session's messages at its leaf."
        }
        Op::Log => {
            add(
                "200",
                json!({
                    "description": "The session log, one JSON event per line.",
                    "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
                }),
            );
            "The session's JSONL log as stored."
        }
        Op::Events => {
            parameters.push(json!({
                "name": "Last-Event-ID", "in": "header", "required": false,
                "description": "Resume after this event id: every log entry after it, then live.",
                "schema": {"type": "string"},
            }));
            parameters.push(json!({
                "name": "after", "in": "query", "required": false,
                "description": "As Last-Event-ID; `0` replays the whole log first.",
                "schema": {"type": "string"},
            }));
            let live = schemas.response::<etch_protocol::Event>();
            add(
                "200",
                json!({
                    "description": "Server-sent events. `event: entry` frames carry a log line with \
                        `id:` its event id (durable, replayed after Last-Event-ID); `event: live` \
                        frames carry a protocol event or response without an id (deltas, tool \
                        progress); a comment every 10 s. A client that falls a queue behind is \
                        dropped and reconnects from its last id.",
                    "content": {"text/event-stream": {"schema": {"oneOf": [
                        {"type": "object", "description": "entry: a log line {type, id, parentId, time, data}"},
                        live,
                    ]}}},
                }),
            );
            add(
                "400",
                fail("The session has no such event (reconnect with ?after=0)."),
            );
            "The session's event stream."
        }
        Op::Lifecycle => {
            add(
                "200",
                json!({
                    "description": "Server-sent events, `event: session`, one per lifecycle change, live only.",
                    "content": {"text/event-stream": {"schema": schemas.response::<api::Lifecycle>()}},
                }),
            );
            "Every session's lifecycle: created, loaded, run started and ended, named, closed."
        }
    };
    let (_, path) = op.route();
    if path.contains("{id}") {
        parameters.insert(
            0,
            json!({
                "name": "id", "in": "path", "required": true,
                "description": "The session id.",
                "schema": {"type": "string"},
            }),
        );
        add("404", fail("No served root has that session."));
    }
    if request.is_some() {
        add("400", fail("The body is not the JSON expected."));
        add("413", fail("The body is over 32 MiB."));
    }
    if op.guarded() {
        add("401", fail("The token is missing or wrong."));
        add("403", fail("The request's Origin is not the server's own."));
    }
    let mut operation = json!({
        "operationId": format!("{op:?}"),
        "summary": summary,
        "responses": responses,
    });
    if let Some(object) = operation.as_object_mut() {
        if let Some(schema) = request {
            object.insert("requestBody".to_owned(), json_body(schema));
        }
        if !parameters.is_empty() {
            object.insert("parameters".to_owned(), Value::Array(parameters));
        }
        if !op.guarded() {
            object.insert("security".to_owned(), json!([]));
        }
    }
    operation
}

/// The description of every operation.
pub fn document() -> Value {
    described().0
}

/// The description, and the types whose request and response forms
/// differ (see [`Schemas::components`]).
fn described() -> (Value, Vec<String>) {
    let mut schemas = Schemas::new();
    let mut paths: Map<String, Value> = Map::new();
    for op in Op::ALL {
        let (method, path) = op.route();
        let operation = describe(op, &mut schemas);
        let item = paths.entry(path.to_owned()).or_insert_with(|| json!({}));
        if let Some(item) = item.as_object_mut() {
            item.insert(method.to_ascii_lowercase(), operation);
        }
    }
    let (components, differ) = schemas.components();
    let doc = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "etch serve",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Sessions over HTTP and server-sent events. Every route but /health \
                needs the token etch serve printed, as `Authorization: Bearer TOKEN`.",
        },
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    });
    (doc, differ)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every operation of the route table is described once, under its
    /// method, and every `$ref` points at a listed component.
    #[test]
    fn every_route_is_described_and_every_ref_resolves() {
        let (doc, differ) = described();
        assert!(
            differ.is_empty(),
            "read and written forms differ for {differ:?}: one name cannot describe both"
        );
        for op in Op::ALL {
            let (method, path) = op.route();
            let operation = &doc["paths"][path][method.to_ascii_lowercase()];
            assert!(operation.is_object(), "{method} {path} is not described");
            assert!(
                operation["responses"]
                    .as_object()
                    .is_some_and(|r| !r.is_empty())
            );
        }
        let count: usize = doc["paths"]
            .as_object()
            .unwrap()
            .values()
            .map(|item| item.as_object().unwrap().len())
            .sum();
        assert_eq!(count, Op::ALL.len());

        let components = doc["components"]["schemas"].as_object().unwrap();
        for name in [
            "Command",
            "Response",
            "Event",
            "Lifecycle",
            "SessionRow",
            "ErrorBody",
        ] {
            assert!(components.contains_key(name), "{name} missing");
        }
        let mut refs = Vec::new();
        collect_refs(&doc, &mut refs);
        assert!(!refs.is_empty());
        for target in refs {
            let name = target
                .strip_prefix("#/components/schemas/")
                .unwrap_or_else(|| panic!("{target} is not a component"));
            assert!(components.contains_key(name), "{target} does not resolve");
        }
    }

    /// Every `$ref` in `value`.
    fn collect_refs(value: &Value, refs: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, inner) in map {
                    match (key.as_str(), inner) {
                        ("$ref", Value::String(target)) => refs.push(target.clone()),
                        _ => collect_refs(inner, refs),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| collect_refs(item, refs)),
            _ => {}
        }
    }
}
