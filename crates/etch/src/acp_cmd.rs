//! `etch acp`: the Agent Client Protocol for editors (`etch_acp`). This
//! module owns the pipes: stdin read on a thread of its own, record by
//! record (LF-terminated, as `etch rpc` reads them), stdout written by
//! another, so neither a slow editor nor a silent one stalls the
//! sessions. It also says how a session's directory becomes a place:
//! that directory's configuration, layered like any run's.
//!
//! stdout carries protocol messages only; warnings go to stderr. When
//! stdin closes (the editor quit), running prompts are aborted with
//! their logs intact and etch exits 0; Ctrl-C does the same with 130.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use etch_acp::{Input, Options, Served};
use tokio::sync::mpsc;

use crate::cli::RunArgs;
use crate::exit::{self, Failure};
use crate::rpc_cmd::{Incoming, read_record};
use crate::run::{Place, settings};

/// Serves one editor until stdin closes.
pub async fn run(place: &Place, session_dir: Option<&Path>, args: &RunArgs) -> Result<(), Failure> {
    /// Run options that make no sense for a protocol server.
    const NOT_FOR_ACP: [&str; 3] = ["-p/--prompt", "--json", "--skill"];
    if let Some(what) = args.given().into_iter().find(|f| NOT_FOR_ACP.contains(f)) {
        return Err(Failure::usage(format!(
            "etch acp does not take {what}: prompts come from the editor as session/prompt requests"
        )));
    }
    let home = place.home.clone();
    let flag_dir: Option<PathBuf> = session_dir.map(Path::to_path_buf);
    let place_for = Box::new(move |cwd: &Path| {
        let mut loaded = etch_config::load(cwd, home.as_deref());
        if loaded.has_errors() {
            let errors: Vec<String> = loaded.diagnostics.iter().map(ToString::to_string).collect();
            return Err(format!(
                "the configuration for {} has errors: {} (see etch config check)",
                cwd.display(),
                errors.join("; ")
            ));
        }
        let mut warnings: Vec<String> =
            loaded.diagnostics.iter().map(ToString::to_string).collect();
        warnings.extend(crate::config_cmd::distrust_project_credentials(&mut loaded));
        let session_dir =
            etch_runtime::paths::session_dir(cwd, flag_dir.as_deref(), &loaded.config.session.dir);
        Ok((
            Place {
                cwd: cwd.to_path_buf(),
                session_dir,
                home: home.clone(),
                config: loaded.config,
            },
            warnings,
        ))
    });
    let stop = tokio_util::sync::CancellationToken::new();
    let options = Options {
        settings: settings(args),
        place_for,
        warn: Arc::new(|warning: String| eprintln!("etch: warning: {warning}")),
        stop: stop.clone(),
    };
    // Ctrl-C stops serving the way a closed stdin does: runs aborted,
    // logs whole.
    let watcher = crate::run::watch_sigint(stop)?;
    let (out, written) = writer();
    let input = read_stdin();
    let served = etch_acp::serve(options, input, out).await;
    watcher.abort();
    // Everything written reaches the editor before etch exits.
    let _ = written.recv_timeout(std::time::Duration::from_secs(10));
    match served {
        Served::Closed => Ok(()),
        Served::Stopped => Err(Failure::new(
            exit::INTERRUPTED,
            anyhow::anyhow!(
                "interrupted; every running prompt was aborted and its session log is intact"
            ),
        )),
        Served::Failed(why) => Err(Failure::new(
            exit::FAILED,
            anyhow::anyhow!(
                "cannot read stdin ({why}); every running prompt was aborted and its session log is intact"
            ),
        )),
    }
}

/// Reads stdin on a thread of its own.
fn read_stdin() -> mpsc::Receiver<Input> {
    let (tx, rx) = mpsc::channel(64);
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut reader = stdin.lock();
        loop {
            let input = match read_record(&mut reader) {
                Ok(Some(Incoming::Line(line))) => Input::Line(line),
                Ok(Some(Incoming::TooLong)) => Input::TooLong,
                Ok(Some(Incoming::Failed(why))) => Input::Failed(why),
                Ok(None) => break,
                Err(err) => Input::Failed(err.to_string()),
            };
            let failed = matches!(input, Input::Failed(_));
            if tx.blocking_send(input).is_err() || failed {
                break;
            }
        }
    });
    rx
}

/// The line writer: a thread writing to stdout, and a receiver told when
/// it has written everything (all senders gone).
fn writer() -> (etch_acp::Out, std::sync::mpsc::Receiver<()>) {
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        for mut line in rx {
            line.push('\n');
            if out.write_all(line.as_bytes()).is_err() || out.flush().is_err() {
                break;
            }
        }
        let _ = done_tx.send(());
    });
    let tx = std::sync::Mutex::new(tx);
    let out: etch_acp::Out = Arc::new(move |line: String| {
        if let Ok(tx) = tx.lock() {
            let _ = tx.send(line);
        }
    });
    (out, done_rx)
}
