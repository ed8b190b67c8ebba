//! Session lines for unit tests: one envelope line, and a minimal
//! `session.started` header with id `A`.

use crate::event::types;

/// Builds one envelope line.
pub(crate) fn line(kind: &str, id: &str, parent: Option<&str>, data: &str) -> String {
    let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"{kind}","id":"{id}","parentId":{parent},"time":"2026-01-01T00:00:00.000Z","data":{data}}}"#
    )
}

/// A minimal header line with id `A`.
pub(crate) fn header() -> String {
    line(
        types::SESSION_STARTED,
        "A",
        None,
        r#"{"sessionId":"S","formatVersion":1,"cwd":"/","etchVersion":"0","provider":"echo","model":"echo"}"#,
    )
}
