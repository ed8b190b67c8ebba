//! `etch serve`: the HTTP front end (`etch-serve`), and its 9P tree with
//! `--9p`, started from the command line. This module checks the flags,
//! binds the addresses, prints the listening line and stops the server
//! on Ctrl-C or SIGTERM; what every route and file does lives in
//! `etch-serve`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::cli::RunArgs;
use crate::exit::{self, Failure};
use crate::run::{Place, settings};

/// Where and what to serve.
pub struct Listen<'a> {
    /// `--listen`.
    pub addr: &'a str,
    /// `--9p`.
    pub nine_p: Option<&'a str>,
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
    let nine = match listen.nine_p {
        Some(spec) => Some(nine_p(spec, listen.insecure_remote).await?),
        None => None,
    };
    let nine_at = nine.as_ref().map(|(_, at)| at.clone());
    let nine = nine.map(|(listener, _)| etch_serve::Nine {
        listener,
        owner: owner(),
    });
    if args.json {
        let mut line = serde_json::json!({"type": "listening", "url": url, "token": token});
        if let Some(at) = &nine_at {
            line["ninep"] = serde_json::json!(at);
        }
        println!("{line}");
    } else {
        println!("etch serve: {url}/?token={token}");
        if let Some(at) = &nine_at {
            if at.starts_with("unix:") {
                println!("etch serve: 9P on {at}");
            } else {
                println!("etch serve: 9P on {at} (attach with the token as the attach name)");
            }
        }
    }
    let stop = stop_signal()?;
    etch_serve::serve(listener, nine, options, stop)
        .await
        .map_err(|e| Failure::new(exit::FAILED, anyhow::Error::new(e)))
}

/// Binds `--9p`'s address: `unix:PATH`, or a TCP address on this
/// machine (off it only with `--insecure-remote`). Answers the listener
/// and the address as bound (`unix:PATH` or `HOST:PORT`).
async fn nine_p(
    spec: &str,
    insecure_remote: bool,
) -> Result<(etch_serve::NineListener, String), Failure> {
    if let Some(path) = spec.strip_prefix("unix:") {
        if path.is_empty() {
            return Err(Failure::usage(
                "--9p unix: needs a path, such as unix:/run/user/1000/etch.9p",
            ));
        }
        let listener = etch_serve::NineListener::unix(Path::new(path))
            .map_err(|e| Failure::new(exit::FAILED, anyhow::Error::new(e)))?;
        return Ok((listener, format!("unix:{path}")));
    }
    let addr: SocketAddr = spec.parse().map_err(|e| {
        Failure::usage(format!(
            "--9p {spec:?} is neither unix:PATH nor an address such as 127.0.0.1:5640 ({e})"
        ))
    })?;
    if !addr.ip().is_loopback() && !insecure_remote {
        return Err(Failure::usage(format!(
            "--9p {addr}: 9P has no encryption, so the token and every prompt would cross the \
             network in the clear; use 127.0.0.1 or unix:PATH, or pass --insecure-remote"
        )));
    }
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        Failure::new(
            exit::FAILED,
            anyhow::anyhow!("cannot listen for 9P on {addr}: {e}; pick another with --9p"),
        )
    })?;
    let bound = listener.local_addr().map_err(|e| {
        Failure::new(
            exit::FAILED,
            anyhow::anyhow!("cannot read the bound 9P address: {e}"),
        )
    })?;
    Ok((etch_serve::NineListener::Tcp(listener), bound.to_string()))
}

/// The name of the user running etch, who owns the 9P files (a name
/// only: every file's permissions are the same for every user).
fn owner() -> String {
    ["USER", "LOGNAME"]
        .iter()
        .find_map(|key| std::env::var(key).ok().filter(|name| !name.is_empty()))
        .unwrap_or_else(|| "etch".to_owned())
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
