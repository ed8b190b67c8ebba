//! Who may talk to the server: every route but `/health` needs the
//! token, as `Authorization: Bearer TOKEN` or the `etch_token` cookie the
//! web page keeps (an `EventSource` cannot set headers); a request whose
//! `Origin` is not the server's own is refused (a page on another site
//! must not drive a local agent through the user's browser).

use std::path::Path;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::error::{ApiError, ServeError};
use crate::state::App;

/// The cookie the web page keeps the token in.
pub const COOKIE: &str = "etch_token";

/// A fresh token: 32 random bytes as hex.
pub fn new_token() -> Result<String, ServeError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| ServeError::Random(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The shortest token taken from a file: a short one can be guessed.
pub const MIN_TOKEN_LEN: usize = 32;

/// The token kept in `file` (`[serve] token_file`): read when the file
/// exists, which must be readable by its owner alone and hold at least
/// [`MIN_TOKEN_LEN`] printable characters; otherwise a fresh token is
/// written to a new file created with mode 0600.
pub fn token_from_file(file: &Path) -> Result<String, ServeError> {
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;
    let failed = |why: String| ServeError::TokenFile {
        file: file.to_path_buf(),
        why,
    };
    match std::fs::metadata(file) {
        Ok(meta) => {
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(failed(format!(
                    "it is readable by others (mode {mode:o}); run chmod 600 on it"
                )));
            }
            let text = std::fs::read_to_string(file).map_err(|e| failed(e.to_string()))?;
            let token = text.trim();
            // Letters, digits, `-` and `_` only: the token goes into a
            // URL and a cookie as it is.
            if token.len() < MIN_TOKEN_LEN
                || !token
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return Err(failed(format!(
                    "it must hold one token of at least {MIN_TOKEN_LEN} letters, digits, - or _; \
                     delete it to have a random one written"
                )));
            }
            Ok(token.to_owned())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let token = new_token()?;
            if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| failed(e.to_string()))?;
            }
            // Named only once whole: a kill never leaves an empty token
            // file that every later start would refuse.
            let mut new = etch_fs::NewFile::new(file, 0o600).map_err(|e| failed(e.to_string()))?;
            new.file()
                .write_all(format!("{token}\n").as_bytes())
                .map_err(|e| failed(e.to_string()))?;
            match new.publish() {
                Ok(_) => Ok(token),
                // Another server made it meanwhile: its token is the one.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => token_from_file(file),
                Err(e) => Err(failed(e.to_string())),
            }
        }
        Err(e) => Err(failed(e.to_string())),
    }
}

/// Refuses foreign origins and requests without the token.
pub async fn guard(
    State(app): State<Arc<App>>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let headers = request.headers();
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        if !app.options.origins.iter().any(|o| o == origin) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "foreign_origin",
                format!(
                    "requests from the origin {origin:?} are refused; use the server's own page"
                ),
            ));
        }
    }
    let path = request.uri().path();
    // The route table says which routes are open (only `/health`).
    let open = crate::routes::Op::ALL
        .iter()
        .any(|op| !op.guarded() && op.route().1 == path);
    if open {
        return Ok(next.run(request).await);
    }
    if path == "/"
        && let Some(given) = query_token(request.uri().query())
    {
        return Ok(if same(given.as_bytes(), app.options.token.as_bytes()) {
            crate::page::signed_in(&app.options.token)
        } else {
            crate::page::sign_in_first()
        });
    }
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='));
    let given = bearer.or(cookie);
    if !given.is_some_and(|t| same(t.as_bytes(), app.options.token.as_bytes())) {
        if matches!(path, "/" | "/page.js" | "/page.css") {
            return Ok(crate::page::sign_in_first());
        }
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this server needs its token: send Authorization: Bearer TOKEN (etch serve printed it)",
        ));
    }
    Ok(next.run(request).await)
}

/// The `token` parameter of a query string, when there is one (a token
/// is hex or printable ASCII: no decoding needed).
fn query_token(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
}

/// Compares without stopping at the first difference.
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_fresh_hex_and_compared_whole() {
        let a = new_token().unwrap();
        let b = new_token().unwrap();
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert!(same(a.as_bytes(), a.as_bytes()));
        assert!(!same(a.as_bytes(), b.as_bytes()));
        assert!(!same(a.as_bytes(), &a.as_bytes()[..63]));
    }

    /// A missing token file is created 0600 and read back the same next
    /// start; one others can read, or one too short, is refused with
    /// the fix.
    #[test]
    fn token_files_are_private_and_kept() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sub/token");
        let first = token_from_file(&file).unwrap();
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(token_from_file(&file).unwrap(), first);

        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let open = token_from_file(&file).unwrap_err().to_string();
        assert!(open.contains("chmod 600"), "{open}");

        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&file, "short\n").unwrap();
        let short = token_from_file(&file).unwrap_err().to_string();
        assert!(short.contains("at least 32"), "{short}");
        std::fs::write(&file, format!("{}&x\n", "a".repeat(40))).unwrap();
        let odd = token_from_file(&file).unwrap_err().to_string();
        assert!(odd.contains("letters, digits"), "{odd}");
    }
}
