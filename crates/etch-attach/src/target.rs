//! What `--attach URL` names: a server, its token, and maybe a session.
//! Accepted: the URL `etch serve` printed (`http://HOST:PORT/?token=T`),
//! with `#ID` (the page's address for a session) or with the path
//! `/v1/sessions/ID`; without a session, a new one is created there.
//! Only `http://` on this machine or wherever the user points: the
//! token goes only to the server named.

use crate::error::AttachError;

/// A server, its token and the session wanted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `http://HOST:PORT`.
    pub base: String,
    /// The bearer token.
    pub token: String,
    /// The session, or `None` for a new one.
    pub session: Option<String>,
}

impl Target {
    /// Reads `url`; the token comes from its `token` parameter, else
    /// from `env_token` (`ETCH_SERVE_TOKEN`).
    pub fn parse(url: &str, env_token: Option<String>) -> Result<Self, AttachError> {
        let bad = |why: &str| AttachError::Url {
            url: url.to_owned(),
            why: why.to_owned(),
        };
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| bad("it must start with http://"))?;
        let (rest, fragment) = match rest.split_once('#') {
            Some((rest, fragment)) => (rest, Some(fragment)),
            None => (rest, None),
        };
        let (rest, query) = match rest.split_once('?') {
            Some((rest, query)) => (rest, Some(query)),
            None => (rest, None),
        };
        let (authority, path) = match rest.split_once('/') {
            Some((authority, path)) => (authority, path),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(bad("it names no host:port"));
        }
        let path = path.trim_end_matches('/');
        let from_path = match path.strip_prefix("v1/sessions/") {
            Some(id) => Some(id),
            None if path.is_empty() => None,
            None => return Err(bad("its path is neither / nor /v1/sessions/ID")),
        };
        let session = from_path
            .or(fragment.filter(|f| !f.is_empty()))
            .map(str::to_owned);
        if let Some(id) = &session
            && !id.bytes().all(|b| b.is_ascii_alphanumeric())
        {
            return Err(bad("a session id is letters and digits"));
        }
        let token = query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .find_map(|pair| pair.strip_prefix("token="))
            .map(str::to_owned)
            .or(env_token)
            .filter(|t| !t.is_empty())
            .ok_or(AttachError::NoToken)?;
        Ok(Self {
            base: format!("http://{authority}"),
            token,
            session,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_printed_url_and_its_session_forms_are_read() {
        let plain = Target::parse("http://127.0.0.1:7411/?token=abc", None).unwrap();
        assert_eq!(
            plain,
            Target {
                base: "http://127.0.0.1:7411".into(),
                token: "abc".into(),
                session: None
            }
        );
        let page = Target::parse("http://127.0.0.1:7411/?token=abc#01ABC", None).unwrap();
        assert_eq!(page.session.as_deref(), Some("01ABC"));
        let api = Target::parse("http://localhost:9/v1/sessions/01XYZ", Some("t".into())).unwrap();
        assert_eq!(
            (api.session.as_deref(), api.token.as_str()),
            (Some("01XYZ"), "t")
        );
    }

    #[test]
    fn bad_urls_say_what_to_give() {
        for (url, why) in [
            ("https://h:1/?token=a", "http://"),
            ("http:///?token=a", "host:port"),
            ("http://h:1/elsewhere?token=a", "/v1/sessions/ID"),
            ("http://h:1/v1/sessions/../x?token=a", "letters and digits"),
        ] {
            let err = Target::parse(url, None).unwrap_err().to_string();
            assert!(err.contains(why), "{url}: {err}");
        }
        assert!(matches!(
            Target::parse("http://h:1/", None),
            Err(AttachError::NoToken)
        ));
    }
}
