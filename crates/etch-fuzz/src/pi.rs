//! `pi_import`: arbitrary bytes as a Pi session file, imported. An
//! import never panics, and a session it writes loads.

use std::collections::HashMap;

use etch_import::pi::{Options, import_file};
use etch_session::{SessionStore, load_session};

/// Checks one input.
pub fn check(data: &[u8]) {
    let Some(dir) = crate::scratch::dir() else {
        return;
    };
    let file = dir.path().join("pi.jsonl");
    if std::fs::write(&file, data).is_err() {
        return;
    }
    let store = SessionStore::new(dir.path().join("sessions"));
    let options = Options {
        force: false,
        dry_run: false,
        etch_version: "fuzz".to_owned(),
    };
    let Ok(outcome) = import_file(&file, &store, &HashMap::<String, String>::new(), &options)
    else {
        return;
    };
    let Some(id) = outcome.session_id else {
        return;
    };
    let path = etch_session::index::session_path(&dir.path().join("sessions"), &id);
    if let Err(e) = load_session(&path) {
        panic!("an imported session does not load: {e}");
    }
}
