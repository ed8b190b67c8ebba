//! Running one hook command (E-HOOK-01, E-HOOK-17, G18 in
//! docs/requirements.md): `sh -c COMMAND` from the working directory, in a
//! process group of its own, with the environment minus the provider
//! credentials, the envelope on stdin, stdout and stderr read with
//! bounds. Past its timeout, or past the output bound, the whole group is
//! killed, so a hook whose child keeps stdout open cannot hold the run.
//! This module must not know what the output means.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// The most stdout read from a hook; more is a failure.
pub const MAX_STDOUT: usize = 4 << 20;
/// The most stderr kept (diagnostics).
pub const MAX_STDERR: usize = 64 << 10;

/// How a hook process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
    /// It ran past its timeout and was killed.
    TimedOut,
    /// It printed more than [`MAX_STDOUT`] and was killed.
    Overflowed,
}

/// What a hook process left.
#[derive(Debug, Clone)]
pub struct Finished {
    /// How it ended.
    pub exit: Exit,
    /// Its stdout (at most [`MAX_STDOUT`] bytes).
    pub stdout: Vec<u8>,
    /// Its stderr, lossily decoded (at most [`MAX_STDERR`] bytes).
    pub stderr: String,
    /// How long it ran.
    pub elapsed: Duration,
}

/// The environment for hooks: `vars` minus the credential variables
/// (`etch_secrets::CREDENTIAL_ENV_VARS`, the set every child is scrubbed of:
/// hooks never get them, G18).
pub fn hook_env(vars: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<(OsString, OsString)> {
    vars.into_iter()
        .filter(|(key, _)| !etch_secrets::CREDENTIAL_ENV_VARS.iter().any(|c| key == *c))
        .collect()
}

/// Runs `command` through `sh -c` in `cwd` with `env`, writing `input`
/// to its stdin, for at most `timeout`. An error means it could not be
/// started at all.
pub async fn run(
    command: &str,
    cwd: &Path,
    input: &[u8],
    env: &[(OsString, OsString)],
    timeout: Duration,
) -> std::io::Result<Finished> {
    let started = Instant::now();
    let mut child =
        etch_spawn::command("sh", ["-c", command], cwd, env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
    let pgid = etch_spawn::group_of(&child);
    let kill = move || etch_spawn::signal_group(pgid, Signal::SIGKILL);
    // If the caller stops waiting (the run was cancelled), the group goes
    // too: dropping this future must not leave the hook's children behind.
    let _group = etch_spawn::KillOnDrop(pgid);
    let mut stdin = child.stdin.take();
    let input = input.to_vec();
    let writer = tokio::spawn(async move {
        if let Some(stdin) = &mut stdin {
            // A hook that does not read its input is fine.
            let _ = stdin.write_all(&input).await;
            let _ = stdin.shutdown().await;
        }
    });
    let stdout = child.stdout.take();
    let reader = tokio::spawn(async move {
        let (out, overflowed) = read_bounded(stdout, MAX_STDOUT).await;
        if overflowed {
            // Past the bound: stop the flood now, not at the timeout.
            kill();
        }
        (out, overflowed)
    });
    let errors = tokio::spawn(read_bounded(child.stderr.take(), MAX_STDERR));
    let status = tokio::time::timeout(timeout, child.wait()).await;
    // The group goes with the hook: nothing it started outlives it, and
    // a child holding stdout open cannot keep the reads waiting.
    kill();
    writer.abort();
    let grace = Duration::from_secs(1);
    let (stdout, overflowed) = match tokio::time::timeout(grace, reader).await {
        Ok(Ok(read)) => read,
        _ => (Vec::new(), false),
    };
    let (stderr, _) = match tokio::time::timeout(grace, errors).await {
        Ok(Ok(read)) => read,
        _ => (Vec::new(), false),
    };
    let exit = match status {
        Err(_) => Exit::TimedOut,
        Ok(_) if overflowed => Exit::Overflowed,
        Ok(Ok(status)) => status
            .code()
            .map_or_else(|| Exit::Signal(status.signal().unwrap_or(0)), Exit::Code),
        Ok(Err(_)) => Exit::Signal(0),
    };
    Ok(Finished {
        exit,
        stdout,
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        elapsed: started.elapsed(),
    })
}

/// Reads `pipe` to its end or `limit` bytes; `true` when there was more.
async fn read_bounded(
    pipe: Option<impl AsyncRead + Unpin + Send>,
    limit: usize,
) -> (Vec<u8>, bool) {
    let Some(mut pipe) = pipe else {
        return (Vec::new(), false);
    };
    let mut out = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => return (out, false),
            Ok(n) => {
                if out.len() + n > limit {
                    let room = limit - out.len();
                    out.extend_from_slice(&chunk[..room]);
                    return (out, true);
                }
                out.extend_from_slice(&chunk[..n]);
            }
        }
    }
}
