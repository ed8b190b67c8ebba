//! Markdown to styled, wrapped rows for the chat's assistant blocks:
//! headings, emphasis, inline code, lists (nested, numbered, task
//! boxes), block quotes, links with their address, rules, tables laid
//! out in columns (or as `header: value` rows when too wide) and fenced
//! code, highlighted through [`super::highlight`] (loaded lazily, off the
//! start-up path). Raw HTML is shown as text. The text has already been
//! sanitized; this module must not know where the rows go.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui_core::style::{Modifier, Style};
use ratatui_core::text::{Line, Span};

use super::theme;
use super::wrap::{Spans, prefixed, text_width, truncate};

/// Renders `markdown` to rows of at most `width` columns.
pub fn render(markdown: &str, width: usize) -> Vec<Line<'static>> {
    let mut r = Renderer {
        width: width.max(2),
        ..Renderer::default()
    };
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    // Entities (`&#x1b;`) become characters in the parser, so what it
    // produces is sanitized again.
    for event in Parser::new_ext(markdown, options).map(clean) {
        r.event(event);
    }
    r.flush();
    while r.out.last().is_some_and(|l| l.width() == 0) {
        r.out.pop();
    }
    r.out
}

/// An event with its text made safe for the terminal.
fn clean(event: Event<'_>) -> Event<'_> {
    match event {
        Event::Text(t) => Event::Text(safe(t)),
        Event::Code(t) => Event::Code(safe(t)),
        Event::Html(t) => Event::Html(safe(t)),
        Event::InlineHtml(t) => Event::InlineHtml(safe(t)),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe(dest_url),
            title,
            id,
        }),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Image {
            link_type,
            dest_url: safe(dest_url),
            title,
            id,
        }),
        other => other,
    }
}

/// `text` sanitized, borrowed when it needed nothing.
fn safe(text: pulldown_cmark::CowStr<'_>) -> pulldown_cmark::CowStr<'_> {
    let cleaned = match crate::term::sanitize(&text) {
        std::borrow::Cow::Borrowed(_) => None,
        std::borrow::Cow::Owned(clean) => Some(clean),
    };
    cleaned.map_or(text, pulldown_cmark::CowStr::from)
}

/// A list being rendered: the next number, or `None` for bullets.
#[derive(Debug, Clone, Copy)]
struct List {
    /// Next item number of an ordered list.
    next: Option<u64>,
}

/// A table being collected.
#[derive(Debug, Default)]
struct Table {
    /// Rows of cells, the header first.
    rows: Vec<Vec<String>>,
    /// Whether the first row is a header.
    header: bool,
}

/// Rendering state.
#[derive(Default)]
struct Renderer {
    /// Columns available.
    width: usize,
    /// Rows made so far.
    out: Vec<Line<'static>>,
    /// Inline text of the block in progress.
    current: Spans,
    /// Inline styles in effect (innermost last).
    styles: Vec<Style>,
    /// Open lists.
    lists: Vec<List>,
    /// The marker of a list item whose first row is not written yet.
    item_marker: Option<String>,
    /// Depth of block quotes.
    quotes: usize,
    /// Fenced code in progress: language and text.
    code: Option<(String, String)>,
    /// Table in progress.
    table: Option<Table>,
    /// Link addresses of open links.
    links: Vec<String>,
    /// Whether the next block should be preceded by a blank row.
    gap: bool,
}

impl Renderer {
    /// Handles one parser event.
    fn event(&mut self, event: Event<'_>) {
        if let Some((_, text)) = &mut self.code {
            match event {
                Event::Text(t) => text.push_str(&t),
                Event::End(TagEnd::CodeBlock) => self.end_code(),
                _ => {}
            }
            return;
        }
        if let Some(table) = &mut self.table {
            match event {
                Event::Start(Tag::TableHead) => {
                    table.header = true;
                    table.rows.push(Vec::new());
                }
                Event::Start(Tag::TableRow) => table.rows.push(Vec::new()),
                Event::Start(Tag::TableCell) => {
                    if table.rows.is_empty() {
                        table.rows.push(Vec::new());
                    }
                    if let Some(row) = table.rows.last_mut() {
                        row.push(String::new());
                    }
                }
                Event::Text(t) | Event::Code(t) => {
                    if let Some(cell) = table.rows.last_mut().and_then(|r| r.last_mut()) {
                        cell.push_str(&t);
                    }
                }
                Event::End(TagEnd::Table) => self.end_table(),
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => self.text(&t, self.style()),
            Event::Code(t) => self.text(&t, theme::code()),
            Event::SoftBreak => self.text(" ", self.style()),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.block_gap();
                let rule = "─".repeat(self.width.min(40));
                self.out
                    .push(Line::from(Span::styled(rule, theme::muted())));
                self.gap = true;
            }
            Event::TaskListMarker(done) => {
                self.text(if done { "[x] " } else { "[ ] " }, theme::muted());
            }
            Event::FootnoteReference(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                self.text(&t, self.style());
            }
        }
    }

    /// Opens a block or inline style.
    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.block_gap(),
            Tag::Heading { level, .. } => {
                self.block_gap();
                let marks = match level {
                    HeadingLevel::H1 => "# ",
                    HeadingLevel::H2 => "## ",
                    _ => "### ",
                };
                self.text(marks, theme::heading());
                self.styles.push(theme::heading());
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.block_gap();
                self.quotes += 1;
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                self.block_gap();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split([' ', ',']).next().unwrap_or("").to_owned()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(first) => {
                self.flush();
                if self.lists.is_empty() {
                    self.block_gap();
                }
                self.lists.push(List { next: first });
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(List { next: Some(n) }) => {
                        let marker = format!("{n}. ");
                        *n += 1;
                        marker
                    }
                    _ => "- ".to_owned(),
                };
                self.item_marker = Some(marker);
            }
            Tag::Emphasis => self.push_style(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => {
                self.push_style(Style::new().add_modifier(Modifier::CROSSED_OUT));
            }
            Tag::Link { dest_url, .. } => {
                self.links.push(dest_url.into_string());
                self.push_style(theme::link());
            }
            Tag::Image { dest_url, .. } => {
                self.links.push(dest_url.into_string());
                self.text("[image: ", theme::muted());
                self.push_style(theme::muted());
            }
            Tag::Table(_) => {
                self.flush();
                self.block_gap();
                self.table = Some(Table::default());
            }
            _ => {}
        }
    }

    /// Closes a block or inline style.
    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush();
                self.gap = self.lists.is_empty();
            }
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush();
                self.gap = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quotes = self.quotes.saturating_sub(1);
                self.gap = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                self.gap = self.lists.is_empty();
            }
            TagEnd::Item => self.flush(),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.links.pop() {
                    let shown: String = self.current.iter().map(|s| s.content.as_ref()).collect();
                    if !url.is_empty() && !shown.ends_with(url.as_str()) {
                        self.text(&format!(" ({url})"), theme::muted());
                    }
                }
            }
            TagEnd::Image => {
                self.styles.pop();
                if let Some(url) = self.links.pop() {
                    self.text(&format!(" {url}]"), theme::muted());
                }
            }
            _ => {}
        }
    }

    /// The inline style in effect.
    fn style(&self) -> Style {
        self.styles
            .iter()
            .fold(Style::new(), |acc, style| acc.patch(*style))
    }

    /// Pushes an inline style on top of the current one.
    fn push_style(&mut self, style: Style) {
        self.styles.push(style);
    }

    /// Adds inline text.
    fn text(&mut self, text: &str, style: Style) {
        if let Some(last) = self.current.last_mut()
            && last.style == style
        {
            last.content.to_mut().push_str(text);
            return;
        }
        self.current.push(Span::styled(text.to_owned(), style));
    }

    /// A blank row before a new block, when one is due.
    fn block_gap(&mut self) {
        if self.gap && !self.out.is_empty() {
            self.out.push(Line::default());
        }
        self.gap = false;
    }

    /// The prefixes of the block in progress: quote bars and list
    /// indentation, with the item marker on its first row.
    fn prefixes(&mut self) -> (String, String) {
        let mut first = "│ ".repeat(self.quotes);
        let depth = self.lists.len().saturating_sub(1);
        first.push_str(&"  ".repeat(depth));
        let mut rest = first.clone();
        if let Some(marker) = self.item_marker.take() {
            rest.push_str(&" ".repeat(marker.len()));
            first.push_str(&marker);
        } else if !self.lists.is_empty() {
            first.push_str("  ");
            rest.push_str("  ");
        }
        (first, rest)
    }

    /// Wraps and writes the inline text in progress.
    fn flush(&mut self) {
        if self.current.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.current);
        let (first, rest) = self.prefixes();
        let lines = prefixed(
            &[spans],
            &Span::styled(first, theme::muted()),
            &Span::styled(rest, theme::muted()),
            self.width,
        );
        self.out.extend(lines);
    }

    /// Writes a finished code block.
    fn end_code(&mut self) {
        let Some((lang, text)) = self.code.take() else {
            return;
        };
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let (first, _) = self.prefixes();
        let indent = Span::styled(first, theme::muted());
        for row in super::highlight::highlight(text, &lang) {
            let mut spans = vec![indent.clone()];
            spans.extend(row);
            let line = Line::from(spans);
            self.out.extend(cut_rows(line, self.width));
        }
        self.gap = true;
    }

    /// Writes a finished table: aligned columns when they fit, else one
    /// `header: value` row per cell.
    fn end_table(&mut self) {
        let Some(table) = self.table.take() else {
            return;
        };
        let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0; columns];
        for row in &table.rows {
            for (i, cell) in row.iter().enumerate() {
                widths[i] = widths[i].max(text_width(cell.trim()));
            }
        }
        let total: usize = widths.iter().sum::<usize>() + 3 * columns.saturating_sub(1);
        if total <= self.width {
            for (r, row) in table.rows.iter().enumerate() {
                let mut spans = Vec::new();
                for (i, width) in widths.iter().enumerate() {
                    if i > 0 {
                        spans.push(Span::styled(" │ ", theme::muted()));
                    }
                    let cell = row.get(i).map_or("", |c| c.trim());
                    let pad = if i + 1 == widths.len() {
                        0
                    } else {
                        width - text_width(cell)
                    };
                    let style = if r == 0 && table.header {
                        theme::strong()
                    } else {
                        Style::new()
                    };
                    spans.push(Span::styled(format!("{cell}{}", " ".repeat(pad)), style));
                }
                self.out.push(Line::from(spans));
                if r == 0 && table.header {
                    let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                    self.out
                        .push(Line::from(Span::styled(rule.join("─┼─"), theme::muted())));
                }
            }
        } else {
            let header = if table.header {
                table.rows.first().cloned()
            } else {
                None
            };
            let skip = usize::from(table.header);
            for (r, row) in table.rows.iter().enumerate().skip(skip) {
                if r > skip {
                    self.out.push(Line::default());
                }
                for (i, cell) in row.iter().enumerate() {
                    let name = header
                        .as_ref()
                        .and_then(|h| h.get(i))
                        .map_or_else(|| format!("{}", i + 1), |h| h.trim().to_owned());
                    let spans = vec![
                        Span::styled(format!("{name}: "), theme::strong()),
                        Span::raw(cell.trim().to_owned()),
                    ];
                    self.out.extend(prefixed(
                        &[spans],
                        &Span::raw(""),
                        &Span::raw("  "),
                        self.width,
                    ));
                }
            }
        }
        self.gap = true;
    }
}

/// A code row longer than the width, cut into rows (code is not
/// word-wrapped: its spacing matters).
fn cut_rows(line: Line<'static>, width: usize) -> Vec<Line<'static>> {
    if line.width() <= width {
        return vec![line];
    }
    let mut rows = vec![];
    let mut row: Vec<Span<'static>> = vec![];
    let mut used = 0;
    for span in line.spans {
        let mut piece = String::new();
        for c in span.content.chars() {
            let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            if used + w > width {
                row.push(Span::styled(std::mem::take(&mut piece), span.style));
                rows.push(Line::from(std::mem::take(&mut row)));
                used = 0;
            }
            piece.push(c);
            used += w;
        }
        row.push(Span::styled(piece, span.style));
    }
    rows.push(Line::from(row));
    rows
}

/// A one-row plain preview of markdown text (for the live area).
pub fn preview_row(text: &str, width: usize) -> String {
    truncate(text.trim(), width)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(markdown: &str, width: usize) -> Vec<String> {
        render(markdown, width)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn headings_lists_quotes_and_links() {
        let text = "# Title\n\nSome *text* with `code` and a [link](https://x.dev).\n\n- one\n- two\n  1. nested\n\n> quoted\n";
        insta::assert_snapshot!(rows(text, 40).join("\n"), @r"
        # Title

        Some text with code and a link
        (https://x.dev).

        - one
        - two
          1. nested

        │ quoted
        ");
    }

    #[test]
    fn tables_fit_or_become_rows() {
        let text = "| name | size |\n|---|---|\n| a.rs | 10 |\n| bb.rs | 200 |\n";
        insta::assert_snapshot!(rows(text, 40).join("\n"), @r"
        name  │ size
        ──────┼─────
        a.rs  │ 10
        bb.rs │ 200
        ");
        insta::assert_snapshot!(rows(text, 8).join("\n"), @r"
        name:
          a.rs
        size:
          10

        name:
          bb.rs
        size:
          200
        ");
    }

    /// Entities that decode to escape characters are removed after
    /// parsing, in text and in link addresses.
    #[test]
    fn entities_cannot_smuggle_escapes() {
        let all = rows("a &#x1b;]52;c;ZXZpbA==&#7; b [x](http://e/&#x1b;[2J)", 80).join("\n");
        assert!(!all.contains('\u{1b}') && !all.contains('\u{7}'), "{all:?}");
    }

    #[test]
    fn code_blocks_keep_their_spacing() {
        let text = "```\nfn main() {\n    let x = 1;\n}\n```\n";
        assert_eq!(rows(text, 40), ["fn main() {", "    let x = 1;", "}"]);
        let long = format!("```\n{}\n```\n", "x".repeat(25));
        assert_eq!(rows(&long, 10).len(), 3);
    }
}
