//! The blocks of the conversation as rows: the start-up header, the
//! user's prompts, the assistant's answers (markdown, from the finished
//! message, never from stream deltas: E-TERM-04 in docs/requirements.md),
//! reasoning (muted), a batch of tool calls grouped under one dot each,
//! notices and command output, and the footer of a turn. Every block is
//! dot-led and rendered at the width of the moment; text from outside is
//! sanitized here. This module must not know where the rows go.

use ratatui_core::style::Style;
use ratatui_core::text::{Line, Span};

use super::tools::{self, ToolView};
use super::wrap::{paragraphs, prefixed};
use super::{markdown, theme};
use crate::term::sanitize;

/// The dot that leads a block.
pub const DOT: &str = "• ";

/// How serious a notice is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Muted information (retries, compaction, cancellation).
    Info,
    /// Something to act on.
    Warning,
    /// Something failed.
    Error,
}

/// One block of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// What the chat says at start: version, model, auth, directory.
    Header {
        /// Rows of the header.
        rows: Vec<String>,
    },
    /// A prompt the user sent.
    User(String),
    /// An assistant answer (markdown).
    Assistant(String),
    /// More of the answer above (a paragraph committed while it streamed):
    /// the same markdown, without a new dot.
    AssistantMore(String),
    /// Reasoning summary text.
    Reasoning(String),
    /// The calls of one assistant message, in the model's order.
    Tools(Vec<ToolView>),
    /// A notice.
    Notice(Level, String),
    /// Output of a slash command, shown as it is.
    Output(String),
    /// The end of a run: time and counters.
    TurnEnd(String),
    /// The images of the block before (a prompt's, a batch's results),
    /// whose markers that block already shows: the terminal draws
    /// nothing more, an exported page draws the pictures.
    Images(Vec<etch_protocol::ReplayImage>),
}

/// The rows of `block` at `width` columns. `expanded` shows a tool
/// batch's results in full.
pub fn render(block: &Block, width: usize, expanded: bool) -> Vec<Line<'static>> {
    let width = width.max(4);
    match block {
        Block::Header { rows } => rows
            .iter()
            .enumerate()
            .flat_map(|(i, row)| {
                let style = if i == 0 {
                    theme::strong()
                } else {
                    theme::muted()
                };
                prefixed(
                    &paragraphs(row, style),
                    &Span::raw(""),
                    &Span::raw("  "),
                    width,
                )
            })
            .collect(),
        Block::User(text) => dotted(&sanitize(text), theme::user(), theme::user(), width),
        Block::Assistant(text) | Block::AssistantMore(text) => {
            let more = matches!(block, Block::AssistantMore(_));
            let body = markdown::render(&sanitize(text), width.saturating_sub(2));
            let mut lines = Vec::with_capacity(body.len());
            for (i, line) in body.into_iter().enumerate() {
                let lead = if i == 0 && !more {
                    Span::styled(DOT, theme::assistant())
                } else if line.width() == 0 {
                    Span::raw("")
                } else {
                    Span::raw("  ")
                };
                let mut spans = vec![lead];
                spans.extend(line.spans);
                lines.push(Line::from(spans));
            }
            if lines.is_empty() {
                lines.push(Line::from(Span::styled(DOT, theme::assistant())));
            }
            lines
        }
        Block::Reasoning(text) => dotted(
            &sanitize(text.trim()),
            theme::muted(),
            theme::reasoning(),
            width,
        ),
        Block::Tools(calls) => calls
            .iter()
            .flat_map(|call| tools::render(call, width, expanded, DOT))
            .collect(),
        Block::Notice(level, text) => {
            let style = match level {
                Level::Info => theme::muted(),
                Level::Warning => theme::warning(),
                Level::Error => theme::error(),
            };
            prefixed(
                &paragraphs(&sanitize(text), style),
                &Span::raw(""),
                &Span::raw(""),
                width,
            )
        }
        Block::Output(text) => prefixed(
            &paragraphs(&sanitize(text), Style::new()),
            &Span::raw(""),
            &Span::raw(""),
            width,
        ),
        Block::TurnEnd(text) => vec![Line::from(Span::styled(
            super::wrap::truncate(&format!("─ {text}"), width),
            theme::muted(),
        ))],
        Block::Images(_) => Vec::new(),
    }
}

/// Plain text led by a dot in `dot` style, the text in `style`.
fn dotted(text: &str, dot: Style, style: Style, width: usize) -> Vec<Line<'static>> {
    prefixed(
        &paragraphs(text, style),
        &Span::styled(DOT, dot),
        &Span::raw("  "),
        width,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(block: &Block, width: usize) -> String {
        render(block, width, false)
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Every block kind at two widths.
    #[test]
    fn every_block_kind() {
        let blocks = [
            Block::Header {
                rows: vec![
                    "etch 0.1.0 · openai chat · qwen".into(),
                    "~/src/etch · /help for commands".into(),
                ],
            },
            Block::User("fix the failing test in src/lib.rs please".into()),
            Block::Reasoning("The test fails because the parser skips blank lines.".into()),
            Block::Assistant("Done: **one** change.\n\n```rust\nlet x = 1;\n```".into()),
            Block::Tools(vec![
                ToolView {
                    id: "a".into(),
                    name: "read".into(),
                    args: json!({"path": "src/lib.rs"}),
                    result: Some("one\ntwo\n".into()),
                    is_error: false,
                    duration_ms: 3,
                    details: None,
                },
                ToolView {
                    id: "b".into(),
                    name: "bash".into(),
                    args: json!({"command": "cargo test"}),
                    result: Some("error: no such command\nCommand exited with code 101".into()),
                    is_error: true,
                    duration_ms: 1500,
                    details: None,
                },
            ]),
            Block::Notice(Level::Info, "cancelled".into()),
            Block::Output("unknown command: /nope".into()),
            Block::TurnEnd("2.1s · 2 requests · 1.2k in · 80 out".into()),
        ];
        let wide: Vec<String> = blocks.iter().map(|b| text(b, 60)).collect();
        insta::assert_snapshot!(wide.join("\n\n"), @r"
        etch 0.1.0 · openai chat · qwen
        ~/src/etch · /help for commands

        • fix the failing test in src/lib.rs please

        • The test fails because the parser skips blank lines.

        • Done: one change.

          let x = 1;

        • read src/lib.rs
          ⎿ 2 lines
        • $ cargo test (1.5s)
          ⎿ error: no such command
            Command exited with code 101

        cancelled

        unknown command: /nope

        ─ 2.1s · 2 requests · 1.2k in · 80 out
        ");
        let narrow: Vec<String> = blocks.iter().map(|b| text(b, 20)).collect();
        insta::assert_snapshot!(narrow.join("\n\n"), @r"
        etch 0.1.0 ·
          openai chat · qwen
        ~/src/etch · /help
          for commands

        • fix the failing
          test in src/lib.rs
          please

        • The test fails
          because the parser
          skips blank lines.

        • Done: one change.

          let x = 1;

        • read src/lib.rs
          ⎿ 2 lines
        • $ cargo test
          (1.5s)
          ⎿ error: no such …
            Command exited …

        cancelled

        unknown command:
        /nope

        ─ 2.1s · 2 requests…
        ");
    }

    /// A 20-column terminal and smaller: rows never exceed the width.
    #[test]
    fn tiny_widths_never_overflow() {
        let block = Block::Assistant(
            "# A heading\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nwordswithoutanyspaces".into(),
        );
        for width in [1, 2, 3, 5, 10, 20] {
            for line in render(&block, width, false) {
                assert!(line.width() <= width.max(6), "{width}: {line}");
            }
        }
    }
}
