//! The text of items as `summary` shows them, cut from the file's own
//! source by span: function signatures up to the body, and declaration
//! shapes for structs, enums, unions, traits, consts, statics, type
//! aliases and `macro_rules!` (bodies and payloads elided as `..`).

use std::fmt::Write as _;

use proc_macro2::{Span, TokenTree};
use syn::spanned::Spanned;
use syn::{AttrStyle, Attribute, Expr, ExprLit, Fields, Lit, Meta, TraitItem, Type};

/// One line of a declaration longer than this is broken into lines.
const ONE_LINE: usize = 100;

/// Most fields, variants or trait items a shape lists.
const MAX_MEMBERS: usize = 40;

/// Most doc comment lines kept per item.
const MAX_DOC_LINES: usize = 40;

/// A parsed file's source with its line starts.
pub struct Source<'a> {
    /// The text the spans point into.
    pub text: &'a str,
    /// Byte offset of each line's start.
    starts: Vec<usize>,
}

impl<'a> Source<'a> {
    /// Indexes `text`.
    pub fn new(text: &'a str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Self { text, starts }
    }

    /// The 1-based line holding byte `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        self.starts.partition_point(|&start| start <= offset).max(1)
    }

    /// The source a span covers (empty when it covers nothing).
    pub fn slice(&self, span: Span) -> &'a str {
        self.text.get(span.byte_range()).unwrap_or("")
    }

    /// The source a span covers on one line, whitespace collapsed.
    pub fn flat(&self, span: Span) -> String {
        collapse(self.slice(span))
    }

    /// Where an item's own text starts: after its outer attributes and doc
    /// comments (and any plain comments between them and the item).
    pub fn head(&self, attrs: &[Attribute], span: Span) -> usize {
        let outer = attrs.iter().rfind(|a| matches!(a.style, AttrStyle::Outer));
        match outer {
            Some(attr) => self.skip_trivia(attr.span().byte_range().end),
            None => span.byte_range().start,
        }
    }

    /// `offset` moved past whitespace and comments.
    fn skip_trivia(&self, mut offset: usize) -> usize {
        loop {
            let rest = self.text.get(offset..).unwrap_or("");
            let trimmed = rest.trim_start();
            offset += rest.len() - trimmed.len();
            if trimmed.starts_with("//") {
                offset += trimmed.find('\n').unwrap_or(trimmed.len());
            } else if let Some(comment) = trimmed.strip_prefix("/*") {
                offset += comment.find("*/").map_or(trimmed.len(), |end| end + 4);
            } else {
                return offset;
            }
        }
    }

    /// The source from `start` to `end` as written, its later lines
    /// dedented by the first line's indentation, trailing space trimmed.
    pub fn dedented(&self, start: usize, end: usize) -> String {
        let text = self.text.get(start..end).unwrap_or("");
        let line_start = self.starts[self.line_of(start) - 1];
        let indent = start.saturating_sub(line_start);
        let mut out = String::new();
        for (i, line) in text.lines().enumerate() {
            if i > 0 {
                out.push('\n');
                let lead = line
                    .bytes()
                    .take_while(|b| *b == b' ' || *b == b'\t')
                    .count();
                out.push_str(&line[lead.min(indent)..]);
            } else {
                out.push_str(line);
            }
        }
        out.trim_end().to_owned()
    }

    /// The non-doc outer attributes as written (one line each) and the
    /// doc comment's text.
    pub fn attrs_and_doc(&self, attrs: &[Attribute]) -> (Vec<String>, String) {
        let mut others = Vec::new();
        let mut doc = Vec::new();
        for attr in attrs.iter().filter(|a| matches!(a.style, AttrStyle::Outer)) {
            if !attr.path().is_ident("doc") {
                others.push(cap(&self.flat(attr.span()), 160));
                continue;
            }
            if let Meta::NameValue(nv) = &attr.meta
                && let Expr::Lit(ExprLit {
                    lit: Lit::Str(text),
                    ..
                }) = &nv.value
            {
                for line in text.value().split('\n') {
                    doc.push(line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned());
                }
            }
        }
        while doc.last().is_some_and(String::is_empty) {
            doc.pop();
        }
        while doc.first().is_some_and(String::is_empty) {
            doc.remove(0);
        }
        if doc.len() > MAX_DOC_LINES {
            let more = doc.len() - MAX_DOC_LINES;
            doc.truncate(MAX_DOC_LINES);
            doc.push(format!("[.. {more} more doc lines]"));
        }
        (others, doc.join("\n"))
    }

    /// A function's signature: from its head to the end of its `where`
    /// clause, as written.
    pub fn signature(&self, head: usize, sig: &syn::Signature) -> String {
        self.dedented(head, sig.span().byte_range().end)
    }

    /// The declaration of a struct or union: `pub struct S<T> { a: u32, b: T }`,
    /// `struct P(u8, u8);` or `struct U;`.
    pub fn struct_shape(&self, head: usize, fields: &Fields, whole: Span) -> String {
        match fields {
            Fields::Named(named) => self.named_shape(head, named),
            Fields::Unnamed(unnamed) => {
                let header = self.between(head, unnamed.paren_token.span.open());
                let members: Vec<String> = unnamed
                    .unnamed
                    .iter()
                    .map(|f| format!("{}{}", self.vis(&f.vis), self.flat(f.ty.span())))
                    .collect();
                let after = self
                    .text
                    .get(unnamed.paren_token.span.close().byte_range().end..whole.byte_range().end)
                    .map(collapse)
                    .unwrap_or_default();
                let spaced = if after.starts_with(';') || after.is_empty() {
                    after
                } else {
                    format!(" {after}")
                };
                cap(&format!("{header}({}){spaced}", members.join(", ")), 400)
            }
            Fields::Unit => cap(
                &collapse(self.text.get(head..whole.byte_range().end).unwrap_or("")),
                400,
            ),
        }
    }

    /// The declaration of a struct or union with named fields:
    /// `pub struct S<T> { a: u32, b: T }`.
    pub fn named_shape(&self, head: usize, named: &syn::FieldsNamed) -> String {
        let header = self.between(head, named.brace_token.span.open());
        let members = named.named.iter().map(|f| {
            let name = f.ident.as_ref().map(ToString::to_string);
            format!(
                "{}{}: {}",
                self.vis(&f.vis),
                name.unwrap_or_default(),
                self.flat(f.ty.span())
            )
        });
        block(&header, members.collect())
    }

    /// The declaration of an enum: `pub enum E { A, B(..), C { .. } }`.
    pub fn enum_shape(&self, head: usize, item: &syn::ItemEnum) -> String {
        let header = self.between(head, item.brace_token.span.open());
        let variants = item.variants.iter().map(|v| {
            let payload = match &v.fields {
                Fields::Named(_) => " { .. }",
                Fields::Unnamed(_) => "(..)",
                Fields::Unit => "",
            };
            let value = v
                .discriminant
                .as_ref()
                .map(|(_, expr)| self.flat(expr.span()))
                .filter(|e| e.len() <= 40)
                .map(|e| format!(" = {e}"))
                .unwrap_or_default();
            format!("{}{payload}{value}", v.ident)
        });
        block(&header, variants.collect())
    }

    /// The declaration of a trait with its items' signatures, one per
    /// line (`{ .. }` marks a default body).
    pub fn trait_shape(&self, head: usize, item: &syn::ItemTrait) -> String {
        let header = self.between(head, item.brace_token.span.open());
        let mut members: Vec<String> = Vec::new();
        for member in &item.items {
            let text = match member {
                TraitItem::Fn(f) => {
                    let sig = self.signature(self.head(&f.attrs, f.span()), &f.sig);
                    let end = if f.default.is_some() { " { .. }" } else { ";" };
                    format!("{sig}{end}")
                }
                TraitItem::Type(t) => self.flat_from(self.head(&t.attrs, t.span()), t.span()),
                TraitItem::Const(c) => self.flat_from(self.head(&c.attrs, c.span()), c.span()),
                _ => continue,
            };
            members.push(cap(&text, 400));
        }
        if members.is_empty() {
            return format!("{header} {{}}");
        }
        let more = members.len().saturating_sub(MAX_MEMBERS);
        members.truncate(MAX_MEMBERS);
        if more > 0 {
            members.push(format!("// .. {more} more"));
        }
        let body: String = members
            .iter()
            .map(|m| {
                m.lines()
                    .map(|line| format!("    {line}\n"))
                    .collect::<String>()
            })
            .collect();
        format!("{header} {{\n{body}}}")
    }

    /// A const or static: its type and, when short, its value.
    pub fn value_shape(&self, head: usize, expr: &Expr, whole: Span) -> String {
        let start = expr.span().byte_range().start;
        let prefix = collapse(self.text.get(head..start).unwrap_or(""));
        let value = self.slice(expr.span());
        if value.len() <= 60 && !value.contains('\n') {
            format!("{prefix} {value};")
        } else if prefix.is_empty() {
            cap(&self.flat_from(head, whole), 200)
        } else {
            format!("{prefix} ..;")
        }
    }

    /// A `macro_rules!` with the matcher of each rule.
    pub fn macro_shape(&self, name: &str, mac: &syn::Macro) -> String {
        let tokens: Vec<TokenTree> = mac.tokens.clone().into_iter().collect();
        let mut rules: Vec<String> = tokens
            .windows(2)
            .filter(|pair| {
                matches!(&pair[0], TokenTree::Group(_))
                    && matches!(&pair[1], TokenTree::Punct(p) if p.as_char() == '=')
            })
            .map(|pair| format!("{} => {{ .. }};", cap(&self.flat(pair[0].span()), 120)))
            .collect();
        if rules.is_empty() {
            return format!("macro_rules! {name} {{ .. }}");
        }
        let more = rules.len().saturating_sub(12);
        rules.truncate(12);
        if more > 0 {
            rules.push(format!("// .. {more} more rules"));
        }
        let body: String = rules.iter().map(|r| format!("    {r}\n")).collect();
        format!("macro_rules! {name} {{\n{body}}}")
    }

    /// The name an impl's self type goes by: the last path segment
    /// (`Agent` for `crate::Agent<T>`, also behind `&`), else the type as
    /// written.
    pub fn type_name(&self, ty: &Type) -> String {
        match ty {
            Type::Path(p) => p
                .path
                .segments
                .last()
                .map_or_else(|| self.flat(ty.span()), |s| s.ident.to_string()),
            Type::Reference(r) => self.type_name(&r.elem),
            Type::Paren(p) => self.type_name(&p.elem),
            Type::Group(g) => self.type_name(&g.elem),
            Type::Ptr(p) => self.type_name(&p.elem),
            _ => self.flat(ty.span()),
        }
    }

    /// The source from `head` to the end of `whole`, on one line.
    pub fn flat_from(&self, head: usize, whole: Span) -> String {
        collapse(self.text.get(head..whole.byte_range().end).unwrap_or(""))
    }

    /// The source from `head` up to where `stop` starts, on one line.
    fn between(&self, head: usize, stop: Span) -> String {
        collapse(self.text.get(head..stop.byte_range().start).unwrap_or(""))
    }

    /// A visibility as written with a trailing space, or nothing.
    fn vis(&self, vis: &syn::Visibility) -> String {
        if matches!(vis, syn::Visibility::Inherited) {
            String::new()
        } else {
            format!("{} ", self.flat(vis.span()))
        }
    }
}

/// `header { a, b }` on one line when short, else one member a line;
/// past [`MAX_MEMBERS`] the rest is counted.
fn block(header: &str, mut members: Vec<String>) -> String {
    if members.is_empty() {
        return format!("{header} {{}}");
    }
    let more = members.len().saturating_sub(MAX_MEMBERS);
    members.truncate(MAX_MEMBERS);
    let one = format!("{header} {{ {} }}", members.join(", "));
    if one.len() <= ONE_LINE && more == 0 {
        return one;
    }
    let mut out = format!("{header} {{\n");
    for member in &members {
        out.push_str("    ");
        out.push_str(member);
        out.push_str(",\n");
    }
    if more > 0 {
        let _ = writeln!(out, "    .. // {more} more");
    }
    out.push('}');
    out
}

/// `text` on one line: runs of whitespace become one space.
pub fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` cut to at most `max` bytes (on a character boundary), marked
/// with ` ..` when cut.
pub fn cap(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} ..", &text[..end])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn lines_collapse_and_cap() {
        let src = Source::new("a\nbc\n\nd");
        assert_eq!(src.line_of(0), 1);
        assert_eq!(src.line_of(1), 1);
        assert_eq!(src.line_of(2), 2);
        assert_eq!(src.line_of(5), 3);
        assert_eq!(src.line_of(6), 4);
        assert_eq!(collapse("  a \n\t b  "), "a b");
        assert_eq!(cap("héllo", 2), "h ..");
        assert_eq!(cap("abc", 3), "abc");
    }

    #[test]
    fn trivia_after_attributes_is_skipped() {
        let src = Source::new("x // note\n  /* c */ pub fn");
        assert_eq!(&src.text[src.skip_trivia(1)..], "pub fn");
    }

    #[test]
    fn dedent_keeps_relative_indentation() {
        let text = "impl A {\n    fn f(\n        a: u8,\n    ) -> u8 {}\n}";
        let src = Source::new(text);
        let start = text.find("fn f").unwrap();
        let end = text.find(" {}").unwrap();
        assert_eq!(src.dedented(start, end), "fn f(\n    a: u8,\n) -> u8");
    }

    #[test]
    fn long_blocks_break_into_lines_and_count_the_rest() {
        assert_eq!(block("struct S", vec![]), "struct S {}");
        assert_eq!(
            block("enum E", vec!["A".into(), "B(..)".into()]),
            "enum E { A, B(..) }"
        );
        let many: Vec<String> = (0..45).map(|i| format!("V{i}")).collect();
        let shown = block("enum E", many);
        assert!(shown.starts_with("enum E {\n    V0,\n"), "{shown}");
        assert!(shown.ends_with("    V39,\n    .. // 5 more\n}"), "{shown}");
    }
}
