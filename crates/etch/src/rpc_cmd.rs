//! `etch rpc`: the session driven over JSON lines (E-CLI-26, P-MODE-04).
//! Commands come in on stdin, one per line; responses and events go out
//! on stdout, one per line, each tagged with the id of the command that
//! caused it. The session, its queues and every command's meaning live in
//! the runtime (`etch_runtime::service` serves it, `host` answers it); this
//! module only frames lines and owns the pipes.
//!
//! Framing is strict: records end at LF only (a trailing CR is dropped),
//! so U+2028 and U+2029 inside a JSON string never split one. Both pipes
//! are served by threads of their own, so that neither a client that
//! stops writing nor one that stops reading can stall the runtime. Memory
//! stays bounded both ways: a command line longer than
//! [`MAX_LINE_BYTES`] is refused, and output waiting for a client that
//! does not read is capped (`ETCH_RPC_OUTBOX_BYTES`, default 64 MiB):
//! past it the run is aborted and etch exits with an error naming the
//! session file. When stdin closes, the active run is aborted cleanly
//! (the log stays valid) and etch exits 0 after writing what is pending;
//! Ctrl-C does the same with exit code 130. Queued texts that will not
//! run are named on stderr.

use std::io::BufRead;
use std::sync::Arc;
use std::time::Duration;

use etch_protocol::{Command, Record, Response};
use etch_runtime::host::Output;
use etch_runtime::service::{SessionHandle, SessionService};
use etch_runtime::{Context, Session, Target};
use tokio::sync::mpsc;

use crate::cli::RunArgs;
use crate::exit::{self, Failure};
use crate::outbox::Outbox;
use crate::run::{Place, open_failure, print_notice, settings};

/// The longest command line read; longer ones are answered with an error
/// and skipped up to their end.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// How long, at exit, pending output may take to reach a client that is
/// still reading.
const DRAIN_AT_EXIT: Duration = Duration::from_secs(10);

/// One record from stdin.
pub(crate) enum Incoming {
    /// A line without its LF (and trailing CR).
    Line(Vec<u8>),
    /// A line over [`MAX_LINE_BYTES`], skipped.
    TooLong,
    /// stdin could not be read; treated like its end.
    Failed(String),
}

/// Serves the session `prefix` names, or a new one, until stdin closes.
pub async fn run(place: &Place, prefix: Option<&str>, args: &RunArgs) -> Result<(), Failure> {
    /// Run options that make no sense for a protocol session.
    const NOT_FOR_RPC: [&str; 4] = ["-p/--prompt", "--json", "--skill", "--image"];
    if let Some(what) = args.given().into_iter().find(|f| NOT_FOR_RPC.contains(f)) {
        return Err(Failure::usage(format!(
            "etch rpc does not take {what}: prompts (and their images) come as {{\"type\":\"prompt\",\"message\":…}} lines on stdin, and output is always JSON lines"
        )));
    }
    let session = open(place, prefix, args).await?;
    let path = session.path().to_path_buf();
    let plugins = std::sync::Arc::clone(&session.context().plugins);
    let mut interrupts = crate::run::interrupts()?;
    let (outbox, writer) = Outbox::start("ETCH_RPC_OUTBOX_BYTES");
    let lines = outbox.sink();
    // A session that failed beyond repair stops serving; what it said
    // before is out already.
    let (broken_tx, mut broken) = mpsc::unbounded_channel();
    let sink = Arc::new(move |output: Output| match output {
        Output::Broken(why) => {
            let _ = broken_tx.send(why);
        }
        output => lines(output.to_line()),
    });
    // `export` to HTML writes the chat's page (everything escaped).
    let mut service = SessionService::new().with_html(Arc::new(etch_chat::export::html));
    let session = service.serve(session, sink);
    let mut commands = read_stdin();
    let stop = loop {
        tokio::select! {
            biased;
            () = outbox.overflow.cancelled() => break Stop::Overflow,
            () = outbox.closed.cancelled() => break Stop::StdoutClosed,
            _ = interrupts.recv() => break Stop::Interrupted,
            Some(why) = broken.recv() => break Stop::Broken(why),
            incoming = commands.recv() => match incoming {
                Some(Incoming::Line(line)) => handle(&session, &outbox, &line).await,
                Some(Incoming::TooLong) => outbox.send(Output::Response(Response::err(
                    None,
                    "parse",
                    format!("the command line is longer than {MAX_LINE_BYTES} bytes and was skipped; send one command per line"),
                )).to_line()),
                Some(Incoming::Failed(error)) => break Stop::StdinFailed(error),
                None => break Stop::StdinClosed,
            },
        }
    };
    drop(session);
    let unsent: Vec<String> = service
        .close_all()
        .await
        .into_iter()
        .flat_map(|closed| closed.unsent)
        .collect();
    plugins.shutdown().await;
    if !unsent.is_empty() {
        diag!(
            "etch: warning: {} queued prompt(s) were not run because etch rpc stopped: {}",
            unsent.len(),
            unsent
                .iter()
                .map(|t| format!("{:?}", preview(t)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let intact = format!("the session log is intact: {}", path.display());
    let failure = |code, message: String| Err(Failure::new(code, anyhow::anyhow!(message)));
    match stop {
        Stop::Overflow => {
            return failure(
                exit::FAILED,
                format!(
                    "the client stopped reading etch rpc's output: more than {} KiB were waiting, so the run was aborted; {intact}",
                    outbox.limit / 1024
                ),
            );
        }
        Stop::Broken(why) => return failure(exit::FAILED, why),
        Stop::StdinFailed(error) => {
            return failure(
                exit::FAILED,
                format!("cannot read stdin ({error}); any run was aborted; {intact}"),
            );
        }
        Stop::Interrupted => {
            return failure(exit::INTERRUPTED, format!("interrupted; {intact}"));
        }
        Stop::StdoutClosed | Stop::StdinClosed => {}
    }
    drop(outbox);
    // Hand over what is pending, unless the client stopped reading.
    if writer.recv_timeout(DRAIN_AT_EXIT).is_err() {
        diag!(
            "etch: warning: the client did not read etch rpc's last output within {} s; it was dropped; {intact}",
            DRAIN_AT_EXIT.as_secs()
        );
    }
    Ok(())
}

/// Why serving stopped.
enum Stop {
    /// stdin ended: the client is done.
    StdinClosed,
    /// stdout was closed: the client went away.
    StdoutClosed,
    /// stdin could not be read.
    StdinFailed(String),
    /// Too much output was waiting for a client that does not read.
    Overflow,
    /// Ctrl-C.
    Interrupted,
    /// A task failed beyond repair.
    Broken(String),
}

/// The start of `text`, for a one-line mention.
fn preview(text: &str) -> String {
    const MAX: usize = 60;
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// Opens the session to serve: the one `prefix` names, or a new one.
async fn open(place: &Place, prefix: Option<&str>, args: &RunArgs) -> Result<Session, Failure> {
    let settings = settings(args);
    let context = Context::build(place, &settings).map_err(open_failure)?;
    for diagnostic in &context.assembled.diagnostics {
        print_notice(etch_runtime::Notice::warning(diagnostic.clone()));
    }
    match prefix {
        Some(prefix) => Session::open(
            place.clone(),
            settings,
            context,
            Target::Prefix(prefix),
            &mut print_notice,
            &mut etch_core::NoopObserver,
        )
        .await
        .map_err(open_failure),
        None => Session::create(
            place.clone(),
            settings,
            context,
            "rpc session".to_owned(),
            &mut print_notice,
        )
        .await
        .map(|(session, _)| session)
        .map_err(open_failure),
    }
}

/// Parses one line and hands the command to the session, waiting until
/// it is taken (so answers keep the order of the lines); a line that is
/// not a command is answered with the reason (and its id when it had
/// one).
async fn handle(session: &dyn SessionHandle, outbox: &Outbox, line: &[u8]) {
    let Ok(text) = std::str::from_utf8(line) else {
        outbox.send(
            Output::Response(Response::err(
                None,
                "parse",
                "the command line is not UTF-8",
            ))
            .to_line(),
        );
        return;
    };
    if text.trim().is_empty() {
        return;
    }
    match serde_json::from_str::<Command>(text) {
        Ok(command) => session.handled(command).await,
        Err(err) => outbox.send(Output::Response(Response::unreadable(text, &err)).to_line()),
    }
}

/// Reads stdin on a thread of its own, record by record.
fn read_stdin() -> mpsc::Receiver<Incoming> {
    let (tx, rx) = mpsc::channel(64);
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut reader = stdin.lock();
        loop {
            let incoming = match read_record(&mut reader) {
                Ok(Some(incoming)) => incoming,
                Ok(None) => break,
                Err(err) => Incoming::Failed(err.to_string()),
            };
            let failed = matches!(incoming, Incoming::Failed(_));
            if tx.blocking_send(incoming).is_err() || failed {
                break;
            }
        }
    });
    rx
}

/// The next record of `reader`, as [`Incoming`]; `None` at the end.
pub(crate) fn read_record<R: BufRead>(reader: &mut R) -> std::io::Result<Option<Incoming>> {
    Ok(
        etch_protocol::read_record(reader, MAX_LINE_BYTES)?.map(|record| match record {
            Record::Line(line) => Incoming::Line(line),
            Record::TooLong => Incoming::TooLong,
        }),
    )
}
