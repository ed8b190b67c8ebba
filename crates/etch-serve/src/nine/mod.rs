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
//! A unix socket is created 0600, so only its owner connects and no
//! token is asked. Over TCP a client gives the server's token as the
//! attach name: 9P has no other way to tell the user from another
//! local account.
//!
//! This module must not know how the HTTP API is routed; both reach
//! the sessions through the same operations (`ops`).

mod conn;
mod files;
mod tree;
mod wire;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::ServeError;
use crate::state::App;

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

/// A unix socket's file, removed when dropped.
#[derive(Debug)]
pub struct SocketFile(PathBuf);

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
        use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
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
        // Bound under a temporary name, made private, then renamed: no
        // moment when another user could connect.
        let temporary = path.with_file_name(format!(
            ".{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        let _ = std::fs::remove_file(&temporary);
        let listener = tokio::net::UnixListener::bind(&temporary)
            .map_err(|e| failed(format!("cannot bind: {e}")))?;
        let placed = std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(0o600))
            .and_then(|()| std::fs::rename(&temporary, path));
        if let Err(e) = placed {
            let _ = std::fs::remove_file(&temporary);
            return Err(failed(format!("cannot make it private: {e}")));
        }
        Ok(Self::Unix(listener, SocketFile(path.to_path_buf())))
    }
}

/// Serves the namespace of `app` on `listener`, owned by `owner`, until
/// the server stops; connections end then too.
pub(crate) async fn serve(app: Arc<App>, listener: Listener, owner: String) {
    let token: Arc<str> = Arc::from(app.options.token.as_str());
    let space = Arc::new(files::Space::new(Arc::clone(&app), owner));
    let stopped = app.stopped();
    tokio::pin!(stopped);
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
                {
                    let _ = stream.set_nodelay(true);
                    let _ = socket2::SockRef::from(&stream)
                        .set_tcp_user_timeout(Some(crate::STALLED_CLIENT));
                    tokio::spawn(conn::serve(
                        stream,
                        Arc::clone(&space),
                        Some(Arc::clone(&token)),
                        app.stopped(),
                    ));
                }
            }
            Listener::Unix(unix, _) => {
                let accepted = tokio::select! {
                    accepted = unix.accept() => accepted,
                    () = &mut stopped => return,
                };
                let Ok((stream, _)) = accepted else {
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                };
                {
                    tokio::spawn(conn::serve(stream, Arc::clone(&space), None, app.stopped()));
                }
            }
        }
    }
}
