//! Parsing one Rust file with `syn` into the items `rust_inspect` lists:
//! fn, struct, enum, union, trait, type alias, const, static,
//! `macro_rules!`, and methods (`Type::method` for impl methods, inherent
//! or of a trait impl, and `Trait::method` for methods declared in a
//! trait), each with its module path, lines, attributes, doc comment and
//! signature or declaration shape. Inline `mod` blocks extend the module
//! path; bodies are not entered.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Attribute, ImplItem, Item as SynItem, TraitItem};

use crate::shape::{Source, cap};

/// What an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A free function.
    Fn,
    /// A method: in an impl (`Type::method`) or declared in a trait
    /// (`Trait::method`).
    Method,
    /// A struct.
    Struct,
    /// An enum.
    Enum,
    /// A union.
    Union,
    /// A trait.
    Trait,
    /// A type alias.
    Type,
    /// A const.
    Const,
    /// A static.
    Static,
    /// A `macro_rules!` macro.
    Macro,
}

impl Kind {
    /// The word rows show for the kind.
    pub fn word(self) -> &'static str {
        match self {
            Self::Fn => "fn",
            Self::Method => "method",
            Self::Struct => "struct",
            Self::Enum => "enum",
            Self::Union => "union",
            Self::Trait => "trait",
            Self::Type => "type",
            Self::Const => "const",
            Self::Static => "static",
            Self::Macro => "macro",
        }
    }
}

/// One item of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// What it is.
    pub kind: Kind,
    /// Its module path, crate name first (`etch_core::agent`).
    pub module: String,
    /// Its name; `Type::method` for methods.
    pub name: String,
    /// The line its own text starts on (after docs and attributes).
    pub line: usize,
    /// The line its docs and attributes start on.
    pub start_line: usize,
    /// Its last line.
    pub end_line: usize,
    /// Its outer attributes other than docs, as written.
    pub attrs: Vec<String>,
    /// Its doc comment, without the `///`.
    pub doc: String,
    /// Its signature (functions) or declaration shape (the rest).
    pub signature: String,
    /// For methods: `impl Trait for Type` or `trait Trait`; else `None`.
    pub context: Option<String>,
}

impl Item {
    /// The module path and name: `etch_core::agent::Agent::run`.
    pub fn qualified(&self) -> String {
        format!("{}::{}", self.module, self.name)
    }
}

/// What one file holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// Its items in source order.
    pub items: Vec<Item>,
    /// The modules it defines: its own first, then its inline `mod`s.
    pub modules: Vec<String>,
}

/// Why a file did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The 1-based line of the error.
    pub line: usize,
    /// The 1-based column of the error.
    pub column: usize,
    /// syn's message.
    pub message: String,
}

/// Parses a file's text; its items belong to `module`.
pub fn parse_source(text: &str, module: &str) -> Result<Parsed, ParseError> {
    let text = prepare(text);
    let result = match syn::parse_str::<syn::File>(&text) {
        Ok(file) => {
            let mut walker = Walker {
                src: Source::new(&text),
                module: module.to_owned(),
                parsed: Parsed {
                    items: Vec::new(),
                    modules: vec![module.to_owned()],
                },
            };
            walker.items(&file.items);
            Ok(walker.parsed)
        }
        Err(err) => {
            let at = err.span().start();
            Err(ParseError {
                line: at.line,
                column: at.column + 1,
                message: err.to_string(),
            })
        }
    };
    // Every parse adds the text to proc-macro2's per-thread source map;
    // nothing refers to its spans any more, so let it go.
    proc_macro2::extra::invalidate_current_thread_spans();
    result
}

/// The text with a byte-order mark dropped and a shebang line blanked
/// (keeping offsets and lines), as `syn::parse_file` would skip them.
fn prepare(text: &str) -> String {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if let Some(rest) = text.strip_prefix("#!")
        && !rest.trim_start().starts_with('[')
    {
        let end = text.find('\n').unwrap_or(text.len());
        return format!("{}{}", " ".repeat(end), &text[end..]);
    }
    text.to_owned()
}

/// Collects the items of one parsed file.
struct Walker<'a> {
    /// The file's source.
    src: Source<'a>,
    /// The module path of the items being collected.
    module: String,
    /// What was found so far.
    parsed: Parsed,
}

impl Walker<'_> {
    /// Collects `items`, which belong to the current module.
    fn items(&mut self, items: &[SynItem]) {
        for item in items {
            self.item(item);
        }
    }

    /// Collects one item (and, for impls, traits and inline mods, what is
    /// inside).
    fn item(&mut self, item: &SynItem) {
        let whole = item.span();
        match item {
            SynItem::Fn(f) => {
                let sig = |src: &Source<'_>, head| src.signature(head, &f.sig);
                self.push(Kind::Fn, name(&f.sig.ident), &f.attrs, whole, None, sig);
            }
            SynItem::Struct(s) => {
                let shape = |src: &Source<'_>, head| src.struct_shape(head, &s.fields, whole);
                self.push(Kind::Struct, name(&s.ident), &s.attrs, whole, None, shape);
            }
            SynItem::Union(u) => {
                let shape = |src: &Source<'_>, head| src.named_shape(head, &u.fields);
                self.push(Kind::Union, name(&u.ident), &u.attrs, whole, None, shape);
            }
            SynItem::Enum(e) => {
                let shape = |src: &Source<'_>, head| src.enum_shape(head, e);
                self.push(Kind::Enum, name(&e.ident), &e.attrs, whole, None, shape);
            }
            SynItem::Trait(t) => {
                let trait_name = name(&t.ident);
                let shape = |src: &Source<'_>, head| src.trait_shape(head, t);
                self.push(
                    Kind::Trait,
                    trait_name.clone(),
                    &t.attrs,
                    whole,
                    None,
                    shape,
                );
                let context = Some(format!("trait {trait_name}"));
                for member in &t.items {
                    if let TraitItem::Fn(f) = member {
                        self.method(&trait_name, &f.sig, &f.attrs, f.span(), context.clone());
                    }
                }
            }
            SynItem::Type(t) => {
                let shape = |src: &Source<'_>, head| cap(&src.flat_from(head, whole), 300);
                self.push(Kind::Type, name(&t.ident), &t.attrs, whole, None, shape);
            }
            SynItem::Const(c) => {
                let shape = |src: &Source<'_>, head| src.value_shape(head, &c.expr, whole);
                self.push(Kind::Const, name(&c.ident), &c.attrs, whole, None, shape);
            }
            SynItem::Static(s) => {
                let shape = |src: &Source<'_>, head| src.value_shape(head, &s.expr, whole);
                self.push(Kind::Static, name(&s.ident), &s.attrs, whole, None, shape);
            }
            SynItem::Macro(m) if m.mac.path.is_ident("macro_rules") => {
                if let Some(ident) = &m.ident {
                    let macro_name = name(ident);
                    let shape = |src: &Source<'_>, _| src.macro_shape(&macro_name, &m.mac);
                    self.push(
                        Kind::Macro,
                        macro_name.clone(),
                        &m.attrs,
                        whole,
                        None,
                        shape,
                    );
                }
            }
            SynItem::Impl(i) => self.impl_block(i),
            SynItem::Mod(m) => {
                if let Some((_, content)) = &m.content {
                    let inner = format!("{}::{}", self.module, name(&m.ident));
                    self.parsed.modules.push(inner.clone());
                    let outer = std::mem::replace(&mut self.module, inner);
                    self.items(content);
                    self.module = outer;
                }
            }
            _ => {}
        }
    }

    /// Collects the methods of an impl block as `Type::method`.
    fn impl_block(&mut self, block: &syn::ItemImpl) {
        let ty = self.src.type_name(&block.self_ty);
        let context = block.trait_.as_ref().map(|(bang, path, _)| {
            format!(
                "impl {}{} for {}",
                if bang.is_some() { "!" } else { "" },
                self.src.flat(path.span()),
                self.src.flat(block.self_ty.span())
            )
        });
        for member in &block.items {
            if let ImplItem::Fn(f) = member {
                self.method(&ty, &f.sig, &f.attrs, f.span(), context.clone());
            }
        }
    }

    /// Records a method of `owner` (a type or a trait) as `Owner::method`.
    fn method(
        &mut self,
        owner: &str,
        sig: &syn::Signature,
        attrs: &[Attribute],
        whole: Span,
        context: Option<String>,
    ) {
        let method = format!("{owner}::{}", name(&sig.ident));
        self.push(Kind::Method, method, attrs, whole, context, |src, head| {
            src.signature(head, sig)
        });
    }

    /// Records one item; `text` renders its signature or shape from
    /// where its own text starts.
    fn push(
        &mut self,
        kind: Kind,
        name: String,
        attrs: &[Attribute],
        whole: Span,
        context: Option<String>,
        text: impl FnOnce(&Source<'_>, usize) -> String,
    ) {
        let range = whole.byte_range();
        let head = self.src.head(attrs, whole);
        let (attrs, doc) = self.src.attrs_and_doc(attrs);
        let signature = text(&self.src, head);
        self.parsed.items.push(Item {
            kind,
            module: self.module.clone(),
            name,
            line: self.src.line_of(head),
            start_line: self.src.line_of(range.start),
            end_line: self
                .src
                .line_of(range.end.saturating_sub(1).max(range.start)),
            attrs,
            doc,
            signature,
            context,
        });
    }
}

/// An identifier without its `r#`.
fn name(ident: &proc_macro2::Ident) -> String {
    ident.unraw().to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::fixture;

    /// The item named `name` (the first one).
    fn item<'a>(parsed: &'a Parsed, name: &str) -> &'a Item {
        let found = parsed.items.iter().find(|i| i.name == name);
        assert!(found.is_some(), "no {name} in {:#?}", parsed.items);
        found.unwrap()
    }

    #[test]
    fn every_kind_is_found_with_its_module() {
        let parsed = parse_source(fixture::LIB_RS, "demo").unwrap();
        let rows: Vec<(&str, String)> = parsed
            .items
            .iter()
            .map(|i| (i.kind.word(), i.qualified()))
            .collect();
        let expected = [
            ("const", "demo::LIMIT"),
            ("static", "demo::GREETING"),
            ("type", "demo::Pair"),
            ("struct", "demo::Widget"),
            ("struct", "demo::Point"),
            ("struct", "demo::Marker"),
            ("enum", "demo::Shape"),
            ("union", "demo::Bits"),
            ("trait", "demo::Render"),
            ("method", "demo::Render::render"),
            ("method", "demo::Render::name"),
            ("method", "demo::Widget::new"),
            ("method", "demo::Widget::area"),
            ("method", "demo::Widget::render"),
            ("method", "demo::Widget::fmt"),
            ("fn", "demo::free_function"),
            ("macro", "demo::square"),
            ("fn", "demo::inner::helper"),
            // Raw identifiers lose their `r#`.
            ("fn", "demo::inner::deeper::type"),
        ];
        let expected: Vec<(&str, String)> = expected
            .iter()
            .map(|(k, n)| (*k, (*n).to_owned()))
            .collect();
        assert_eq!(rows, expected);
        assert_eq!(
            parsed.modules,
            ["demo", "demo::inner", "demo::inner::deeper"]
        );
    }

    #[test]
    fn signatures_and_shapes() {
        let parsed = parse_source(fixture::LIB_RS, "demo").unwrap();
        let sig = |name: &str| item(&parsed, name).signature.clone();
        assert_eq!(sig("LIMIT"), "pub const LIMIT: usize = 10;");
        assert_eq!(sig("GREETING"), "static GREETING: &str = ..;");
        assert_eq!(sig("Pair"), "pub type Pair<T> = (T, T);");
        assert_eq!(
            sig("Widget"),
            "pub struct Widget { pub width: u32, height: u32, label: Option<String> }"
        );
        assert_eq!(sig("Point"), "pub struct Point(pub i64, pub i64);");
        assert_eq!(sig("Marker"), "struct Marker;");
        assert_eq!(
            sig("Shape"),
            "pub enum Shape { Circle(..), Rect { .. }, Empty = 7 }"
        );
        assert_eq!(sig("Bits"), "union Bits { int: u32, float: f32 }");
        assert_eq!(
            sig("Render"),
            "pub trait Render: Send {\n    \
             fn render(&self, out: &mut String) -> usize;\n    \
             fn name(&self) -> &'static str { .. }\n    \
             type Output;\n    \
             const SIDES: u8;\n}"
        );
        assert_eq!(
            sig("Widget::new"),
            "pub fn new(\n    width: u32,\n    height: u32,\n) -> Self"
        );
        assert_eq!(
            sig("free_function"),
            "pub async fn free_function<T: Clone>(value: T) -> Vec<T>\nwhere\n    T: Send,"
        );
        assert_eq!(
            sig("square"),
            "macro_rules! square {\n    ($x:expr) => { .. };\n    ($x:expr, $y:expr) => { .. };\n}"
        );
    }

    #[test]
    fn lines_docs_attributes_and_context() {
        let parsed = parse_source(fixture::LIB_RS, "demo").unwrap();
        let widget = item(&parsed, "Widget");
        assert_eq!(widget.doc, "A thing on screen.\n\nIt has a size.");
        assert_eq!(widget.attrs, ["#[derive(Debug, Clone)]"]);
        let line_of = |needle: &str| {
            fixture::LIB_RS
                .lines()
                .position(|l| l.contains(needle))
                .unwrap()
                + 1
        };
        assert_eq!(widget.start_line, line_of("/// A thing on screen."));
        assert_eq!(widget.line, line_of("pub struct Widget"));
        assert_eq!(widget.end_line, widget.line + 4);
        let new = item(&parsed, "Widget::new");
        assert_eq!(new.line, line_of("pub fn new("));
        assert_eq!(new.context, None);
        let fmt = item(&parsed, "Widget::fmt");
        assert_eq!(
            fmt.context.as_deref(),
            Some("impl std::fmt::Display for Widget")
        );
        let declared = item(&parsed, "Render::render");
        assert_eq!(declared.context.as_deref(), Some("trait Render"));
        assert_eq!(declared.doc, "Draws.");
        let helper = item(&parsed, "helper");
        assert_eq!(helper.attrs, ["#[inline]"]);
        assert_eq!(helper.line, line_of("fn helper"));
    }

    #[test]
    fn broken_files_report_where() {
        let err = parse_source(fixture::BAD_RS, "demo::bad").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(!err.message.is_empty());
        // A shebang and a byte-order mark are skipped, lines kept.
        let parsed = parse_source("\u{feff}#!/usr/bin/env run\nfn main() {}\n", "x").unwrap();
        assert_eq!(parsed.items[0].line, 2);
    }
}
