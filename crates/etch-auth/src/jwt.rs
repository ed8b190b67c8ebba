//! Reading claims from JWTs (the OpenAI `id_token` and access token).
//!
//! This module owns base64url decoding of the payload segment and the claim
//! names OpenAI uses. It deliberately does NOT verify signatures: the tokens
//! arrive straight from the issuer over TLS and are only read locally for
//! display and routing hints (account id, expiry); the server that receives
//! them verifies them. It must not know HTTP or storage.

use chrono::{DateTime, Utc};
use serde_json::Value;

/// The claim namespace OpenAI puts its auth details under.
const OPENAI_AUTH_CLAIM: &str = "https://api.openai.com/auth";

/// The decoded payload (middle segment) of a JWT, or `None` if the token is not
/// a three-part JWT with a base64url JSON object payload.
pub fn payload(token: &str) -> Option<Value> {
    let mut parts = token.split('.');
    let (_header, body, _sig) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let bytes = base64url_decode(body)?;
    let value: Value = serde_json::from_slice(&bytes).ok()?;
    value.is_object().then_some(value)
}

/// The ChatGPT account id from an id token's
/// `https://api.openai.com/auth` → `chatgpt_account_id` claim.
pub fn account_id(id_token: &str) -> Option<String> {
    payload(id_token)?
        .get(OPENAI_AUTH_CLAIM)?
        .get("chatgpt_account_id")?
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// The `exp` claim (seconds since the epoch) of a token, as a time.
pub fn expiry(token: &str) -> Option<DateTime<Utc>> {
    let exp = payload(token)?.get("exp")?.as_i64()?;
    DateTime::from_timestamp(exp, 0)
}

/// Decodes unpadded or padded base64url (RFC 4648 §5); `None` on any invalid
/// character or impossible length.
fn base64url_decode(input: &str) -> Option<Vec<u8>> {
    /// The value of one base64url character.
    fn sextet(c: u8) -> Option<u32> {
        match c {
            b'A'..=b'Z' => Some(u32::from(c - b'A')),
            b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
            b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
            b'-' => Some(62),
            b'_' => Some(63),
            _ => None,
        }
    }
    let trimmed = input.trim_end_matches('=').as_bytes();
    if trimmed.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(trimmed.len() * 3 / 4);
    for chunk in trimmed.chunks(4) {
        let mut acc = 0u32;
        for &c in chunk {
            acc = (acc << 6) | sextet(c)?;
        }
        // Left-align the bits of a short final chunk into 24 bits.
        let bits = chunk.len() * 6;
        acc <<= 24 - bits;
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..=(bits / 8)]);
    }
    Some(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Encodes base64url without padding, to build test tokens.
    pub(crate) fn b64(data: &[u8]) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut out = String::new();
        for chunk in data.chunks(3) {
            let mut buf = [0u8; 3];
            buf[..chunk.len()].copy_from_slice(chunk);
            let n = (u32::from(buf[0]) << 16) | (u32::from(buf[1]) << 8) | u32::from(buf[2]);
            for i in 0..=chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            }
        }
        out
    }

    /// A fake unsigned JWT with this payload.
    pub(crate) fn make_jwt(payload: &Value) -> String {
        format!(
            "{}.{}.sig",
            b64(br#"{"alg":"none"}"#),
            b64(payload.to_string().as_bytes())
        )
    }

    /// Decoding inverts encoding for every length remainder.
    #[test]
    fn base64url_round_trip() {
        for data in [
            &b""[..],
            b"f",
            b"fo",
            b"foo",
            b"foob",
            b"fooba",
            b"\xff\xfe\xfd",
        ] {
            assert_eq!(base64url_decode(&b64(data)).unwrap(), data);
        }
        assert_eq!(base64url_decode("Zm9vYg==").unwrap(), b"foob");
        assert_eq!(base64url_decode("a"), None);
        assert_eq!(base64url_decode("a+b/"), None);
    }

    /// The account id comes from the namespaced OpenAI claim.
    #[test]
    fn account_id_from_claim() {
        let token = make_jwt(&serde_json::json!({
            "email": "u@example.com",
            "https://api.openai.com/auth": {"chatgpt_account_id": "acct-42"}
        }));
        assert_eq!(account_id(&token).as_deref(), Some("acct-42"));
        assert_eq!(
            account_id(&make_jwt(&serde_json::json!({"sub": "x"}))),
            None
        );
        assert_eq!(account_id("not-a-jwt"), None);
        assert_eq!(account_id("a.!!!.c"), None);
    }

    /// `exp` is read as seconds since the epoch.
    #[test]
    fn expiry_from_exp() {
        let token = make_jwt(&serde_json::json!({"exp": 1_900_000_000}));
        assert_eq!(expiry(&token).unwrap().timestamp(), 1_900_000_000);
        assert_eq!(expiry(&make_jwt(&serde_json::json!({}))), None);
    }
}
