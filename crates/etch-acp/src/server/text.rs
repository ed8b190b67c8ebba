//! What a prompt's text means to etch: slash commands (`/compact`,
//! `/skill:NAME`), the prompt's content blocks as one text, and what a
//! compaction says back.

use agent_client_protocol_schema::v1::{ContentBlock, EmbeddedResourceResource, Error};
use serde_json::Value;

use crate::rpc;

/// What a prompt's text asks for.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Slash {
    /// `/compact [focus]`.
    Compact(Option<String>),
    /// `/skill:NAME [text]`.
    Skill(String, String),
    /// An ordinary prompt.
    None,
}

/// Reads a slash command at the start of `text`.
pub(super) fn slash(text: &str, skills: &[(String, String)]) -> Slash {
    let Some(rest) = text.trim_start().strip_prefix('/') else {
        return Slash::None;
    };
    let (word, tail) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let tail = tail.trim().to_owned();
    if word == "compact" {
        return Slash::Compact(Some(tail).filter(|t| !t.is_empty()));
    }
    if let Some(name) = word.strip_prefix("skill:")
        && skills.iter().any(|(n, _)| n == name)
    {
        return Slash::Skill(name.to_owned(), tail);
    }
    Slash::None
}

/// What a compaction's answer says, for the editor.
pub(super) fn compacted(data: Option<&Value>) -> String {
    if let Some(why) = data.and_then(|d| d.get("skipped")).and_then(Value::as_str) {
        // The reason reads "compaction skipped: …"; it is a sentence here.
        let mut chars = why.chars();
        return chars.next().map_or_else(String::new, |first| {
            first.to_uppercase().chain(chars).collect()
        });
    }
    let n = |key: &str| data.and_then(|d| d.get(key)).and_then(Value::as_u64);
    match (n("tokensBefore"), n("tokensAfter")) {
        (Some(before), Some(after)) => {
            format!("Compacted the conversation: about {before} tokens before, {after} after.")
        }
        _ => "Compacted the conversation.".to_owned(),
    }
}

/// What a prompt of image blocks alone says as its text (the run needs
/// one).
pub(super) const IMAGES_ONLY: &str = "(see the attached image)";

/// A prompt's content as one text (text as it is, resources inlined
/// with their URI, links as mentions) and its images, in order. Audio
/// is refused (the capabilities say etch does not take it).
pub(super) fn prompt_text(
    blocks: &[ContentBlock],
) -> Result<(String, Vec<etch_protocol::ImageInput>), Error> {
    let mut parts = Vec::new();
    let mut images = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::ResourceLink(link) => parts.push(format!("@{}", link.uri)),
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(text) => parts.push(format!(
                    "<context uri=\"{}\">\n{}\n</context>",
                    text.uri, text.text
                )),
                EmbeddedResourceResource::BlobResourceContents(blob) => parts.push(format!(
                    "(a binary resource, {}, was attached and left out)",
                    blob.uri
                )),
                _ => {}
            },
            ContentBlock::Image(image) => images.push(etch_protocol::ImageInput {
                kind: "image".to_owned(),
                data: image.data.clone(),
                mime_type: image.mime_type.clone(),
            }),
            ContentBlock::Audio(_) => {
                return Err(rpc::invalid_params(
                    "session/prompt",
                    &"etch takes text, images, resources and links; audio is not supported (see promptCapabilities)",
                ));
            }
            _ => {}
        }
    }
    let mut text = parts.join("\n\n");
    if text.trim().is_empty() {
        if images.is_empty() {
            return Err(rpc::invalid_params(
                "session/prompt",
                &"the prompt is empty",
            ));
        }
        IMAGES_ONLY.clone_into(&mut text);
    }
    Ok((text, images))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slash commands are read only at the start, skills only by name.
    #[test]
    fn slash_commands() {
        let skills = vec![("review".to_owned(), "Reviews".to_owned())];
        assert_eq!(slash("/compact", &skills), Slash::Compact(None));
        assert_eq!(
            slash("/compact keep the plan", &skills),
            Slash::Compact(Some("keep the plan".into()))
        );
        assert_eq!(
            slash("/skill:review src/lib.rs", &skills),
            Slash::Skill("review".into(), "src/lib.rs".into())
        );
        assert_eq!(slash("/skill:nope x", &skills), Slash::None);
        assert_eq!(slash("please /compact", &skills), Slash::None);
    }
}
