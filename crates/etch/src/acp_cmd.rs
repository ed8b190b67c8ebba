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
//! Output waiting for an editor that does not read is capped
//! (`ETCH_ACP_OUTBOX_BYTES`, 64 MiB): past it the prompts are aborted
//! and etch exits 1 saying so.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use etch_acp::{Input, Options, Served};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::cli::RunArgs;
use crate::exit::{self, Failure};
use crate::outbox::Outbox;
use crate::rpc_cmd::{Incoming, read_record};
use crate::run::{Place, settings};

/// Serves one editor until stdin closes.
pub async fn run(place: &Place, session_dir: Option<&Path>, args: &RunArgs) -> Result<(), Failure> {
    /// Run options that make no sense for a protocol server.
    const NOT_FOR_ACP: [&str; 4] = ["-p/--prompt", "--json", "--skill", "--image"];
    if let Some(what) = args.given().into_iter().find(|f| NOT_FOR_ACP.contains(f)) {
        return Err(Failure::usage(format!(
            "etch acp does not take {what}: prompts come from the editor as session/prompt requests"
        )));
    }
    let home = place.home.clone();
    let flag_dir: Option<PathBuf> = session_dir.map(Path::to_path_buf);
    let place_for = Box::new(move |cwd: &Path| {
        Place::load(cwd, home.as_deref(), flag_dir.as_deref()).map_err(|errors| {
            format!(
                "the configuration for {} has errors: {} (see etch config check)",
                cwd.display(),
                errors.join("; ")
            )
        })
    });
    let stop = CancellationToken::new();
    let options = Options {
        settings: settings(args),
        place_for,
        // Each notice printed as a run prints it: a warning gets the
        // `etch: warning:` prefix, a line with its own prefix (the
        // provider header) none more.
        notify: Arc::new(crate::run::print_notice),
        stop: stop.clone(),
    };
    // Ctrl-C stops serving the way a closed stdin does: runs aborted,
    // logs whole.
    let watcher = crate::run::watch_sigint(stop.clone())?;
    // An editor that stops reading stops the serving too.
    let (outbox, written) = Outbox::start("ETCH_ACP_OUTBOX_BYTES");
    let overflow = outbox.overflow.clone();
    let stopper = {
        let (overflow, stop) = (overflow.clone(), stop.clone());
        tokio::spawn(async move {
            overflow.cancelled().await;
            stop.cancel();
        })
    };
    let out: etch_acp::Out = outbox.sink();
    drop(outbox);
    let input = read_stdin();
    let served = etch_acp::serve(options, input, out).await;
    watcher.abort();
    stopper.abort();
    let overflowed = overflow.is_cancelled();
    // Everything written reaches the editor before etch exits, unless
    // the editor stopped reading.
    if !overflowed {
        let _ = written.recv_timeout(std::time::Duration::from_secs(10));
    }
    match served {
        Served::Closed => Ok(()),
        Served::Stopped if overflowed => Err(Failure::new(
            exit::FAILED,
            anyhow::anyhow!(
                "the editor stopped reading etch acp's output (more was waiting than ETCH_ACP_OUTBOX_BYTES allows), so every running prompt was aborted; every session log is intact"
            ),
        )),
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
