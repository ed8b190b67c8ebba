//! A validated config value, independent of the TOML parser's types.
//!
//! This module owns the value shapes and their TOML rendering: the four
//! of E-CFG-05 (string, integer, boolean, string array; see
//! docs/requirements.md) and finite numbers, which only prices use (a
//! price such as 1.25 USD per million tokens has no natural integer
//! unit). It must not know files, spans or where a value came from.

use crate::schema::Literal;

/// A value that passed validation against its [`KeySpec`](crate::schema::KeySpec).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// A string.
    String(String),
    /// An integer, already checked against the key's range.
    Integer(i64),
    /// A boolean.
    Boolean(bool),
    /// An array of strings.
    StringArray(Vec<String>),
    /// A finite number, already checked against the key's range.
    Number(f64),
}

impl Value {
    /// The value of a compiled default.
    pub(crate) fn from_literal(literal: Literal) -> Self {
        match literal {
            Literal::Str(text) => Self::String(text.to_owned()),
            Literal::Int(number) => Self::Integer(number),
            Literal::Bool(flag) => Self::Boolean(flag),
        }
    }

    /// The string, when this is one.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Self::String(text) => Some(text),
            _ => None,
        }
    }

    /// The integer, when this is one.
    pub(crate) fn as_integer(&self) -> Option<i64> {
        match self {
            Self::Integer(number) => Some(*number),
            _ => None,
        }
    }

    /// The number, when this is one.
    pub(crate) fn as_number(&self) -> Option<f64> {
        match self {
            Self::Number(number) => Some(*number),
            _ => None,
        }
    }

    /// The boolean, when this is one.
    pub(crate) fn as_bool(&self) -> Option<bool> {
        match self {
            Self::Boolean(flag) => Some(*flag),
            _ => None,
        }
    }

    /// The strings, when this is a string array.
    pub(crate) fn as_strings(&self) -> Option<&[String]> {
        match self {
            Self::StringArray(items) => Some(items),
            _ => None,
        }
    }

    /// The value as a TOML right-hand side, quoted and escaped by `toml`
    /// itself so `--effective` always parses back.
    pub(crate) fn to_toml(&self) -> String {
        let value = match self {
            Self::String(text) => toml::Value::String(text.clone()),
            Self::Integer(number) => toml::Value::Integer(*number),
            Self::Boolean(flag) => toml::Value::Boolean(*flag),
            Self::Number(number) => toml::Value::Float(*number),
            Self::StringArray(items) => {
                toml::Value::Array(items.iter().cloned().map(toml::Value::String).collect())
            }
        };
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rendering escapes what TOML needs escaped.
    #[test]
    fn renders_toml() {
        assert_eq!(Value::String("a\"b".into()).to_toml(), r#"'a"b'"#);
        assert_eq!(Value::Integer(-3).to_toml(), "-3");
        assert_eq!(Value::Boolean(true).to_toml(), "true");
        assert_eq!(
            Value::StringArray(vec!["ls".into(), "read".into()]).to_toml(),
            r#"["ls", "read"]"#
        );
        assert_eq!(Value::from_literal(Literal::Int(5)).as_integer(), Some(5));
        assert_eq!(Value::Boolean(false).as_str(), None);
    }
}
