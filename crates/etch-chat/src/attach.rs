//! Images attached to a prompt in the chat: a pasted path of an image
//! file (what a terminal types when a file is dropped on it: quoted,
//! backslash-escaped or a `file://` URL) becomes an attachment shown as
//! `[image #1 screenshot.png 1568x882]`; a path typed into the prompt or
//! an `@path` mention of an image file is attached when the prompt is
//! sent. Each image is read and made fit exactly as `read` does it, and
//! travels to the session as base64 in the prompt command.
//!
//! This module must not know about the terminal or the editor.

use std::path::{Path, PathBuf};

use etch_model::Image;
use etch_protocol::ImageInput;

/// The image file a pasted text names, when it is exactly one path (as
/// terminals paste a dropped file) of an existing file whose bytes are an
/// image, resolved against `cwd`.
pub fn pasted_path(text: &str, cwd: &Path) -> Option<PathBuf> {
    let text = text.trim();
    if text.is_empty() || text.contains('\n') {
        return None;
    }
    let unquoted = strip_quotes(text);
    let path = match unquoted.strip_prefix("file://") {
        Some(rest) => percent_decoded(rest)?,
        None => unescape_spaces(unquoted),
    };
    let path = expand(&path, cwd)?;
    is_image_file(&path).then_some(path)
}

/// The image files a prompt names: each word that is a path (or an
/// `@path` mention) of an existing image file, in order, once each.
pub fn named_in(text: &str, cwd: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for word in text.split_whitespace() {
        let word = word.strip_prefix('@').unwrap_or(word);
        // Prose punctuation after a path is not part of it.
        let word = word.trim_end_matches([',', '.', ';', ':', '?', '!', ')']);
        let word = strip_quotes(word);
        if !has_image_extension(word) {
            continue;
        }
        let Some(path) = expand(word, cwd) else {
            continue;
        };
        if is_image_file(&path) && !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

/// Reads the image at `path` and makes it fit a long edge of `max_edge`.
///
/// # Errors
/// What is wrong with the file, naming it as `shown`.
pub fn load(path: &Path, shown: &str, max_edge: u32) -> Result<Image, String> {
    etch_runtime::images::from_file(path, shown, max_edge)
        .map(|prepared| prepared.image)
        .map_err(|e| e.to_string())
}

/// The marker an attachment shows in the editor: `[image #1 shot.png
/// 1568x882]`.
pub fn marker(n: usize, path: &Path, image: &Image) -> String {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    format!("[image #{n} {name} {}x{}]", image.width, image.height)
}

/// `image` as the prompt command carries it.
pub fn input(image: &Image) -> Option<ImageInput> {
    Some(ImageInput {
        kind: "image".to_owned(),
        data: image.base64()?,
        mime_type: image.media_type.mime().to_owned(),
    })
}

/// Whether `word` ends in an image extension.
fn has_image_extension(word: &str) -> bool {
    let lower = word.to_ascii_lowercase();
    [".png", ".jpg", ".jpeg", ".gif", ".webp"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

/// Whether `path` is a regular file whose first bytes are an image's.
fn is_image_file(path: &Path) -> bool {
    use std::io::Read as _;
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    let mut head = [0u8; 16];
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let n = file.read(&mut head).unwrap_or(0);
    etch_model::MediaType::sniff(&head[..n]).is_some()
}

/// `text` without one pair of surrounding quotes.
fn strip_quotes(text: &str) -> &str {
    for quote in ['\'', '"'] {
        if let Some(inner) = text
            .strip_prefix(quote)
            .and_then(|rest| rest.strip_suffix(quote))
        {
            return inner;
        }
    }
    text
}

/// A shell-escaped path (`my\ shot.png`) as the path it names.
fn unescape_spaces(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A `file://` URL's path with `%XX` escapes decoded; `None` when they
/// are not valid UTF-8.
fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// `path` resolved: `~/` against the home, relative against `cwd`.
fn expand(path: &str, cwd: &Path) -> Option<PathBuf> {
    if let Some(rest) = path.strip_prefix("~/") {
        return std::env::var_os("HOME").map(|home| Path::new(&home).join(rest));
    }
    if path.is_empty() {
        return None;
    }
    Some(cwd.join(path))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use etch_model::MediaType;

    use super::*;

    /// Terminals paste a dropped file quoted, escaped or as a URL; all
    /// name the image, and only an image.
    #[test]
    fn pasted_paths_are_recognized() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = etch_image::sample(8, 8, MediaType::Png).unwrap();
        std::fs::write(dir.path().join("my shot.png"), &bytes).unwrap();
        std::fs::write(dir.path().join("notes.png"), "text").unwrap();
        let cwd = dir.path();
        let expected = Some(cwd.join("my shot.png"));
        assert_eq!(pasted_path("'my shot.png'", cwd), expected);
        assert_eq!(pasted_path("my\\ shot.png\n", cwd), expected);
        let url = format!("file://{}/my%20shot.png", cwd.display());
        assert_eq!(pasted_path(&url, cwd), expected);
        assert_eq!(pasted_path("notes.png", cwd), None);
        assert_eq!(pasted_path("look at my shot.png", cwd), None);
        assert_eq!(pasted_path("missing.png", cwd), None);
    }

    /// Typed paths and `@` mentions of images are found once each, in
    /// order; other words are left alone.
    #[test]
    fn typed_paths_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let png = etch_image::sample(8, 8, MediaType::Png).unwrap();
        std::fs::write(dir.path().join("a.png"), &png).unwrap();
        std::fs::write(
            dir.path().join("b.jpg"),
            etch_image::sample(8, 8, MediaType::Jpeg).unwrap(),
        )
        .unwrap();
        std::fs::write(dir.path().join("c.png"), "not an image").unwrap();
        let found = named_in(
            "compare @a.png with b.jpg, and a.png; c.png x.png",
            dir.path(),
        );
        assert_eq!(
            found,
            vec![dir.path().join("a.png"), dir.path().join("b.jpg")]
        );
    }

    /// The marker names the file and the size the model gets.
    #[test]
    fn markers_name_the_file_and_size() {
        let image = Image::new(vec![1, 2], MediaType::Png, 1568, 882);
        assert_eq!(
            marker(1, Path::new("/tmp/screenshot.png"), &image),
            "[image #1 screenshot.png 1568x882]"
        );
        let input = input(&image).unwrap();
        assert_eq!(input.mime_type, "image/png");
        assert_eq!(input.data, "AQI=");
    }
}
