//! What the fake server remembers about one request, for tests to assert on.

use serde_json::Value;

/// One request as the fake server received it, kept so a test can check what the
/// client under test sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The request method as sent, e.g. `POST`.
    pub method: String,
    /// The request target as sent, including any query string, e.g.
    /// `/v1/chat/completions`.
    pub path: String,
    /// Every header in the order received, names and values as sent (values
    /// trimmed of surrounding whitespace).
    pub headers: Vec<(String, String)>,
    /// The request body after removing any chunked transfer encoding.
    pub body: Vec<u8>,
}

impl Recorded {
    /// The value of the first header called `name`, compared case-insensitively
    /// because HTTP header names are case-insensitive and clients differ in case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body parsed as JSON, or [`Value::Null`] if it is not JSON, so tests can
    /// index into request bodies without handling parse errors.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The body as text, with invalid UTF-8 replaced, for substring assertions.
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sample with mixed-case headers and a JSON body.
    fn sample(body: &[u8]) -> Recorded {
        Recorded {
            method: "POST".to_owned(),
            path: "/v1/messages".to_owned(),
            headers: vec![
                ("X-Api-Key".to_owned(), "k1".to_owned()),
                ("x-api-key".to_owned(), "k2".to_owned()),
            ],
            body: body.to_vec(),
        }
    }

    /// Header lookup ignores case and returns the first match.
    #[test]
    fn header_is_case_insensitive_and_first_wins() {
        let rec = sample(b"{}");
        assert_eq!(rec.header("X-API-KEY"), Some("k1"));
        assert_eq!(rec.header("missing"), None);
    }

    /// `json` parses JSON bodies and yields Null for anything else.
    #[test]
    fn json_is_null_when_not_json() {
        assert_eq!(sample(br#"{"a":1}"#).json()["a"], 1);
        assert!(sample(b"not json").json().is_null());
        assert!(sample(b"").json().is_null());
    }

    /// `body_text` replaces invalid UTF-8 rather than failing.
    #[test]
    fn body_text_is_lossy() {
        assert_eq!(sample(b"hi \xff").body_text(), "hi \u{fffd}");
    }
}
