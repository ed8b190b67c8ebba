//! Tests of the chunk parser and its lexing: randomized agreement with
//! `serde_json`, rejection of broken frames, escapes and the SWAR string
//! scan. They must not depend on the decoder or on recorded fixtures.

use std::borrow::Cow;

use serde_json::Value;

use super::lex::{quote_or_backslash, unescape};
use super::parse_chunk;

/// A small deterministic generator (xorshift64), so the randomized tests
/// need no extra dependency and always see the same cases.
struct Rng(u64);

impl Rng {
    /// The next pseudo-random number.
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n`.
    fn below(&mut self, n: u64) -> usize {
        usize::try_from(self.next() % n).unwrap()
    }

    /// A string mixing ASCII, JSON-escaped characters, multi-byte UTF-8
    /// and astral characters (escaped as surrogate pairs by nobody, but
    /// long enough to cross the eight-byte scan boundary).
    fn string(&mut self) -> String {
        const PIECES: &[&str] = &[
            "a",
            "Zz",
            " ",
            "\"",
            "\\",
            "/",
            "\n",
            "\t",
            "\u{1}",
            "é",
            "世界",
            "🦀",
            "{",
            "}",
            "[",
            ",",
            ":",
            "null",
            "0123456789",
        ];
        let len = self.below(12);
        (0..len)
            .map(|_| PIECES[self.below(PIECES.len() as u64)])
            .collect()
    }

    /// A random JSON value for the envelope, nested up to `depth`.
    fn value(&mut self, depth: usize) -> Value {
        match self.below(if depth == 0 { 5 } else { 7 }) {
            0 => Value::Null,
            1 => Value::Bool(self.below(2) == 0),
            2 => serde_json::json!(self.next() % 100_000),
            3 => serde_json::json!(-1.5e3),
            4 => Value::String(self.string()),
            5 => (0..self.below(4)).map(|_| self.value(depth - 1)).collect(),
            _ => {
                let mut object = serde_json::Map::new();
                for _ in 0..self.below(4) {
                    object.insert(self.string(), self.value(depth - 1));
                }
                Value::Object(object)
            }
        }
    }

    /// A text field as servers send it: usually a string, sometimes
    /// `null` or something odd.
    fn text_field(&mut self) -> Value {
        match self.below(6) {
            0 => Value::Null,
            1 => self.value(1),
            _ => Value::String(self.string()),
        }
    }

    /// A random chunk, with the fields the decoder reads among envelope
    /// noise.
    fn chunk(&mut self) -> Value {
        let mut delta = serde_json::Map::new();
        for key in ["content", "reasoning_content", "reasoning", "role"] {
            if self.below(2) == 0 {
                delta.insert(key.into(), self.text_field());
            }
        }
        if self.below(2) == 0 {
            let calls: Vec<Value> = (0..self.below(3))
                .map(|i| {
                    let arguments = if self.below(4) == 0 {
                        serde_json::json!({"path": self.string(), "n": [1, {"k": null}]})
                    } else {
                        self.text_field()
                    };
                    serde_json::json!({
                        "index": if self.below(5) == 0 { Value::Null } else { serde_json::json!(i) },
                        "id": self.text_field(),
                        "type": "function",
                        "function": {"name": self.text_field(), "arguments": arguments},
                    })
                })
                .collect();
            delta.insert("tool_calls".into(), calls.into());
        }
        let choice = serde_json::json!({
            "index": 0,
            "finish_reason": self.text_field(),
            "delta": if self.below(6) == 0 { Value::Null } else { Value::Object(delta) },
            "logprobs": self.value(2),
        });
        let choices = match self.below(6) {
            0 => Value::Null,
            1 => serde_json::json!([]),
            _ => serde_json::json!([choice, {"index": 1, "delta": {"content": "second"}}]),
        };
        let mut chunk = serde_json::Map::new();
        chunk.insert("id".into(), Value::String(self.string()));
        chunk.insert("noise".into(), self.value(3));
        chunk.insert("choices".into(), choices);
        chunk.insert(self.string(), self.value(2));
        if self.below(3) == 0 {
            chunk.insert(
                "usage".into(),
                serde_json::json!({"prompt_tokens": 3, "completion_tokens": 4}),
            );
        }
        Value::Object(chunk)
    }
}

/// What the decoder should read from a text field per the leniency
/// rules: strings as they are, anything else as absent.
fn expected_text(value: &Value) -> Option<String> {
    value.as_str().map(str::to_owned)
}

/// The parser reads exactly what `serde_json::Value` sees in thousands of
/// random chunks, compact and pretty-printed: text fields, tool-call
/// fragments (object arguments kept as equivalent JSON text), finish
/// reason, usage.
#[test]
fn parser_matches_serde_json_on_random_chunks() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for case in 0..3000 {
        let value = rng.chunk();
        let compact = value.to_string();
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        for text in [&compact, &pretty] {
            let chunk = parse_chunk(text).unwrap_or_else(|e| panic!("case {case}: {e}: {text}"));
            let first = value["choices"].get(0).filter(|c| c.is_object());
            assert_eq!(chunk.choice, first.is_some(), "case {case}");
            assert_eq!(
                chunk.usage.is_some(),
                value.get("usage").is_some(),
                "case {case}"
            );
            let Some(first) = first else { continue };
            let choice = &chunk;
            let delta = &first["delta"];
            let got = |field: &Option<Cow<'_, str>>| field.as_deref().map(str::to_owned);
            assert_eq!(
                got(&choice.finish_reason),
                expected_text(&first["finish_reason"])
            );
            assert_eq!(
                got(&choice.delta.content),
                expected_text(&delta["content"]),
                "case {case}"
            );
            assert_eq!(
                got(&choice.delta.reasoning_content),
                expected_text(&delta["reasoning_content"])
            );
            assert_eq!(
                got(&choice.delta.reasoning),
                expected_text(&delta["reasoning"])
            );
            let calls = delta["tool_calls"].as_array().cloned().unwrap_or_default();
            assert_eq!(choice.delta.tool_calls.len(), calls.len(), "case {case}");
            for (fragment, call) in choice.delta.tool_calls.iter().zip(&calls) {
                assert_eq!(
                    fragment.index,
                    call["index"].as_u64().map(|i| usize::try_from(i).unwrap())
                );
                assert_eq!(got(&fragment.id), expected_text(&call["id"]));
                assert_eq!(
                    got(&fragment.name),
                    expected_text(&call["function"]["name"])
                );
                let arguments = &call["function"]["arguments"];
                match fragment.arguments.as_deref() {
                    Some(text) if arguments.is_object() || arguments.is_array() => {
                        assert_eq!(&serde_json::from_str::<Value>(text).unwrap(), arguments);
                    }
                    other => assert_eq!(other.map(str::to_owned), expected_text(arguments)),
                }
            }
        }
    }
}

/// Broken frames fail cleanly, never panic: every strict prefix of a
/// chunk is rejected, and no single-byte corruption panics; whenever
/// serde_json still accepts the corrupted text as an object, so does the
/// parser.
#[test]
fn parser_rejects_truncation_and_survives_corruption() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for _ in 0..200 {
        let text = rng.chunk().to_string();
        for cut in (0..text.len()).filter(|cut| text.is_char_boundary(*cut)) {
            assert!(
                parse_chunk(&text[..cut]).is_err(),
                "prefix accepted: {}",
                &text[..cut]
            );
        }
        let mut bytes = text.into_bytes();
        for _ in 0..40 {
            let at = rng.below(bytes.len() as u64);
            let old = bytes[at];
            bytes[at] = b"\"\\{}[],:0 ntfu-"[rng.below(15)];
            if let Ok(corrupt) = std::str::from_utf8(&bytes) {
                let parsed = parse_chunk(corrupt);
                if serde_json::from_str::<Value>(corrupt).is_ok_and(|v| v.is_object()) {
                    assert!(parsed.is_ok(), "{corrupt}: {parsed:?}");
                }
            }
            bytes[at] = old;
        }
    }
    for bad in [
        "",
        "[]",
        "\"x\"",
        "{",
        "{\"a\"}",
        "{\"a\":}",
        "{\"a\":1,}",
        "{\"a\":1} x",
        "{\"a\":tru}",
        "{\"a\":[1 2]}",
    ] {
        assert!(parse_chunk(bad).is_err(), "{bad}");
    }
    let deep = format!("{{\"a\":{}{}}}", "[".repeat(200), "]".repeat(200));
    assert!(parse_chunk(&deep).unwrap_err().contains("too deep"));
}

/// Escapes decode like JSON's: simple ones, `\u`, surrogate pairs; a
/// lone surrogate becomes U+FFFD; a bad escape is an error.
#[test]
fn unescapes_strings() {
    let cases = [
        (r#"a\"b\\c\/d\b\f\n\r\t"#, "a\"b\\c/d\u{8}\u{c}\n\r\t"),
        (r"\u00e9\u4e16 \uD83E\uDD80!", "é世 🦀!"),
        (r"x\uD83Ey", "x\u{FFFD}y"),
        (r"\uDD80", "\u{FFFD}"),
        (r"\uD83E\u0041", "\u{FFFD}A"),
    ];
    for (raw, expected) in cases {
        assert_eq!(unescape(raw).unwrap(), expected, "{raw}");
    }
    for bad in [r"\x", r"\u12", r"\uZZZZ", "\\é"] {
        assert!(unescape(bad).is_err(), "{bad}");
    }
}

/// The eight-bytes-at-a-time scan finds the same position as a plain
/// search, at every offset and alignment.
#[test]
fn swar_scan_matches_naive_search() {
    let mut rng = Rng(7);
    for _ in 0..2000 {
        let len = rng.below(40);
        let bytes: Vec<u8> = (0..len)
            .map(|_| match rng.below(20) {
                0 => b'"',
                1 => b'\\',
                2 => 0x80 | u8::try_from(rng.below(64)).unwrap(),
                _ => b' ' + u8::try_from(rng.below(90)).unwrap(),
            })
            .collect();
        for from in 0..=len {
            let naive = bytes[from..]
                .iter()
                .position(|b| *b == b'"' || *b == b'\\')
                .map_or(len, |p| from + p);
            assert_eq!(
                quote_or_backslash(&bytes, from),
                naive,
                "{bytes:?} from {from}"
            );
        }
    }
}
