//! The server's sessions as a 9P2000 file tree (`etch serve --9p`), after
//! ollie's namespace: creating a session is a write to
//! `/sessions/new`, a prompt a write to its `prompt`, the answer a
//! blocking read of its `chat`; shell scripts, acme and any 9P client
//! drive sessions with reads and writes, never polling.
//!
//! - `wire`: the message format.
//! - `conn`: one connection: fids, waiting requests, flushes.
//! - `tree`: which files exist, with what permissions and qids.
//! - `files`: what opening, reading and writing each one does.
//!
//! A unix socket is created 0600 (and each peer's user is checked), so
//! only its owner connects and no token is asked. Over TCP a client gives the server's token as the
//! attach name: 9P has no other way to tell the user from another
//! local account.
//!
//! This module must not know how the HTTP API is routed; both reach
//! the sessions through the same operations (`ops`).

mod conn;
mod files;
mod tree;
pub mod wire;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::ServeError;
use crate::state::App;

/// Connections served at once; more are closed as they come.
const MAX_CONNECTIONS: usize = 256;

/// How long to wait after a failed accept.
const ACCEPT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(50);

/// Where the 9P namespace listens.
#[derive(Debug)]
pub enum Listener {
    /// A TCP address (clients give the token as the attach name).
    Tcp(tokio::net::TcpListener),
    /// A unix socket, owner-only; removed when the server stops.
    Unix(tokio::net::UnixListener, SocketFile),
}

/// A unix socket's file, removed when dropped, and the user it admits.
#[derive(Debug)]
pub struct SocketFile(PathBuf, u32);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl Listener {
    /// A unix socket at `path`, readable and writable by its owner only
    /// from the moment it has that name. A stale socket there (nothing
    /// listening) is replaced; anything else is refused.
    pub fn unix(path: &Path) -> Result<Self, ServeError> {
        use std::os::unix::fs::{
            DirBuilderExt as _, FileTypeExt as _, MetadataExt as _, PermissionsExt as _,
        };
        let failed = |why: String| ServeError::Socket {
            path: path.to_path_buf(),
            why,
        };
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_socket() => {
                if std::os::unix::net::UnixStream::connect(path).is_ok() {
                    return Err(failed(
                        "another server listens there; stop it or pick another path".to_owned(),
                    ));
                }
                std::fs::remove_file(path)
                    .map_err(|e| failed(format!("cannot replace it: {e}")))?;
            }
            Ok(_) => {
                return Err(failed(
                    "a file that is not a socket is there; remove it or pick another path"
                        .to_owned(),
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(failed(e.to_string())),
        }
        let name = path
            .file_name()
            .ok_or_else(|| failed("the path names no file".to_owned()))?;
        // Bound in a fresh directory only this user can enter, made
        // private, then renamed into place: no moment when another user
        // could connect. Each connection's peer is checked besides.
        let private = path.with_file_name(format!(
            ".{}.{}.{}",
            name.to_string_lossy(),
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&private)
            .map_err(|e| failed(format!("cannot make a private directory beside it: {e}")))?;
        let temporary = private.join("socket");
        let placed = tokio::net::UnixListener::bind(&temporary)
            .map_err(|e| format!("cannot bind: {e}"))
            .and_then(|listener| {
                std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(0o600))
                    .and_then(|()| std::fs::rename(&temporary, path))
                    .map_err(|e| format!("cannot make it private: {e}"))?;
                let owner = std::fs::metadata(path)
                    .map_err(|e| format!("cannot read it back: {e}"))?
                    .uid();
                Ok((listener, owner))
            });
        let _ = std::fs::remove_file(&temporary);
        let _ = std::fs::remove_dir(&private);
        let (listener, owner) = placed.map_err(failed)?;
        Ok(Self::Unix(listener, SocketFile(path.to_path_buf(), owner)))
    }
}

/// Serves the namespace of `app` on `listener`, owned by `owner`, until
/// the server stops; connections end then too.
pub(crate) async fn serve(app: Arc<App>, listener: Listener, owner: String) {
    let token: Arc<str> = Arc::from(app.options.token.as_str());
    let space = Arc::new(files::Space::new(Arc::clone(&app), owner));
    let stopped = app.stopped();
    tokio::pin!(stopped);
    let room = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        match &listener {
            Listener::Tcp(tcp) => {
                let accepted = tokio::select! {
                    accepted = tcp.accept() => accepted,
                    () = &mut stopped => return,
                };
                let Ok((stream, _)) = accepted else {
                    // Out of descriptors, most likely: give a closing
                    // connection a moment instead of spinning.
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                };
                let Ok(slot) = Arc::clone(&room).try_acquire_owned() else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let _ = socket2::SockRef::from(&stream)
                    .set_tcp_user_timeout(Some(crate::STALLED_CLIENT));
                let served = conn::serve(
                    stream,
                    Arc::clone(&space),
                    Some(Arc::clone(&token)),
                    app.stopped(),
                );
                tokio::spawn(async move {
                    served.await;
                    drop(slot);
                });
            }
            Listener::Unix(unix, SocketFile(_, owner)) => {
                let accepted = tokio::select! {
                    accepted = unix.accept() => accepted,
                    () = &mut stopped => return,
                };
                let Ok((stream, _)) = accepted else {
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                };
                // Only the user the socket is for: its mode says so, and
                // the peer's credentials confirm it.
                if !stream.peer_cred().is_ok_and(|peer| peer.uid() == *owner) {
                    continue;
                }
                let Ok(slot) = Arc::clone(&room).try_acquire_owned() else {
                    continue;
                };
                let served = conn::serve(stream, Arc::clone(&space), None, app.stopped());
                tokio::spawn(async move {
                    served.await;
                    drop(slot);
                });
            }
        }
    }
}
