//! `etch serve`: the HTTP front end (`etch-serve`) started from the
//! command line. This module checks the flags, binds the address, prints
//! the listening line and stops the server on Ctrl-C or SIGTERM; what
//! every route does lives in `etch-serve`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::cli::RunArgs;
use crate::exit::{self, Failure};
use crate::run::{Place, settings};

/// Where and what to serve.
pub struct Listen<'a> {
    /// `--listen`.
    pub addr: &'a str,
    /// `--root`, repeatable.
    pub roots: &'a [PathBuf],
    /// `--insecure-remote`.
    pub insecure_remote: bool,
}

/// Serves until Ctrl-C or SIGTERM, then exits 0 with every log intact.
pub async fn run(
    place: &Place,
    home: Option<&Path>,
    session_dir: Option<&Path>,
    listen: &Listen<'_>,
    args: &RunArgs,
) -> Result<(), Failure> {
    /// Run options that make no sense for a server.
    const NOT_FOR_SERVE: [&str; 3] = ["-p/--prompt", "--skill", "--image"];
    if let Some(what) = args.given().into_iter().find(|f| NOT_FOR_SERVE.contains(f)) {
        return Err(Failure::usage(format!(
            "etch serve does not take {what}: prompts come as POST /v1/sessions/ID/prompt"
        )));
    }
    let addr: SocketAddr = listen.addr.parse().map_err(|e| {
        Failure::usage(format!(
            "--listen {:?} is not an address such as 127.0.0.1:7411 ({e})",
            listen.addr
        ))
    })?;
    if !addr.ip().is_loopback() && !listen.insecure_remote {
        return Err(Failure::usage(format!(
            "etch serve has no TLS, so listening on {addr} would send the token and every prompt \
             unencrypted; listen on 127.0.0.1 (and tunnel with ssh -L), or pass --insecure-remote"
        )));
    }
    let roots = if listen.roots.is_empty() {
        vec![
            place
                .cwd
                .canonicalize()
                .unwrap_or_else(|_| place.cwd.clone()),
        ]
    } else {
        let mut roots = Vec::with_capacity(listen.roots.len());
        for root in listen.roots {
            let real = root
                .canonicalize()
                .map_err(|e| Failure::usage(format!("--root {}: {e}", root.display())))?;
            if !real.is_dir() {
                return Err(Failure::usage(format!(
                    "--root {} is not a directory",
                    root.display()
                )));
            }
            roots.push(real);
        }
        roots
    };
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        Failure::new(
            exit::FAILED,
            anyhow::anyhow!(
                "cannot listen on {addr}: {e}; pick another with --listen (port 0 picks a free one)"
            ),
        )
    })?;
    let bound = listener.local_addr().map_err(|e| {
        Failure::new(
            exit::FAILED,
            anyhow::anyhow!("cannot read the bound address: {e}"),
        )
    })?;
    let url = format!("http://{bound}");
    let mut origins = vec![url.clone()];
    if bound.ip().is_loopback() {
        origins.push(format!("http://localhost:{}", bound.port()));
    }
    let serve = &place.config.serve;
    let token = match &serve.token_file {
        Some(file) => etch_serve::token_from_file(&token_path(file, &place.cwd, home)),
        None => etch_serve::new_token(),
    }
    .map_err(|e| Failure::new(exit::FAILED, anyhow::Error::new(e)))?;
    let options = etch_serve::Options {
        token: token.clone(),
        url: url.clone(),
        origins,
        roots,
        home: home.map(Path::to_path_buf),
        session_dir: session_dir.map(Path::to_path_buf),
        defaults: settings(args),
        max_running: usize::try_from(serve.max_running).unwrap_or(usize::MAX),
        idle_unload: (serve.idle_unload_secs > 0)
            .then(|| std::time::Duration::from_secs(serve.idle_unload_secs)),
        notify: etch_serve::Notify(std::sync::Arc::new(|message: &str| {
            diag!("etch serve: {}", etch_sanitize::sanitize(message));
        })),
    };
    if args.json {
        println!(
            "{}",
            serde_json::json!({"type": "listening", "url": url, "token": token})
        );
    } else {
        println!("etch serve: {url}/?token={token}");
    }
    let stop = stop_signal()?;
    etch_serve::serve(listener, options, stop)
        .await
        .map_err(|e| Failure::new(exit::FAILED, anyhow::Error::new(e)))
}

/// `[serve] token_file` as a path: `~/` is the home, a relative path is
/// against the project root (else the cwd), like every path key.
fn token_path(file: &str, cwd: &Path, home: Option<&Path>) -> PathBuf {
    match (file.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => etch_runtime::paths::project_root(cwd).join(file),
    }
}

/// Resolves at the first Ctrl-C or SIGTERM.
fn stop_signal() -> Result<impl std::future::Future<Output = ()> + Send + 'static, Failure> {
    use tokio::signal::unix::{SignalKind, signal};
    let watch = |kind: SignalKind, what: &str| {
        signal(kind).map_err(|e| {
            Failure::new(
                exit::FAILED,
                anyhow::anyhow!("cannot watch for {what}: {e}"),
            )
        })
    };
    let mut interrupt = watch(SignalKind::interrupt(), "Ctrl-C")?;
    let mut terminate = watch(SignalKind::terminate(), "SIGTERM")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}
