//! `rpc_command`: arbitrary bytes as one `etch rpc` command line. A line
//! that parses is a command that writes back to JSON and parses again
//! the same; one that does not is answered with an error response that
//! is one line of JSON.

use etch_protocol::{Command, Response};

/// Checks one input.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match serde_json::from_str::<Command>(text) {
        Ok(command) => {
            let written = serde_json::to_string(&command).unwrap_or_default();
            let again: Command = match serde_json::from_str(&written) {
                Ok(again) => again,
                Err(e) => panic!("a command written back does not parse: {e}: {written}"),
            };
            assert_eq!(again, command, "the command changed on its way back");
        }
        Err(err) => {
            let line = serde_json::to_string(&Response::unreadable(text, &err)).unwrap_or_default();
            assert!(!line.contains('\n'), "an answer spans lines: {line}");
            assert!(serde_json::from_str::<serde_json::Value>(&line).is_ok());
        }
    }
}
