//! Images attached to a prompt, from wherever a front end takes them: a
//! file (`etch -p --image`, a path pasted into the chat) or base64 from a
//! client (RPC's and the server's `images`, ACP's image blocks). Each is
//! checked and made fit for a model exactly as `read` does it, so a
//! prompt's image and a read one look the same to every provider.
//!
//! This module must not know which front end asked or how the image is
//! sent on.

use std::path::Path;

use etch_image::{Limits, Prepared};
use etch_model::MediaType;

/// Most images one prompt takes: more would not fit a request to any
/// provider (Anthropic's 32 MB, 20 images at full size).
pub const MAX_PROMPT_IMAGES: usize = 20;

/// The largest image file or decoded client image taken.
#[allow(clippy::cast_possible_truncation)]
pub const MAX_IMAGE_BYTES: usize = etch_model::image::MAX_IMAGE_BYTES as usize;

/// Why an attachment cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    /// The file cannot be read.
    #[error("cannot read image {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is too large.
    #[error("image {what} is {size} bytes, more than the {max} taken; scale it down first")]
    TooLarge {
        /// The file, or the client's image number.
        what: String,
        /// Its size.
        size: u64,
        /// The most taken.
        max: usize,
    },
    /// A client's data is not base64.
    #[error("image {what}: `data` is not base64; send the image's bytes base64-encoded")]
    NotBase64 {
        /// Which image.
        what: String,
    },
    /// A client's `mimeType` is none of the four.
    #[error(
        "image {what}: mimeType {mime:?} is not taken; send image/png, image/jpeg, image/gif or image/webp"
    )]
    MediaType {
        /// Which image.
        what: String,
        /// What the client said.
        mime: String,
    },
    /// The bytes are no usable image.
    #[error("image {what}: {source}")]
    Image {
        /// The file, or the client's image number.
        what: String,
        /// Why.
        source: etch_image::ImageError,
    },
    /// More images than a prompt takes.
    #[error("{count} images attached; a prompt takes at most {max}")]
    TooMany {
        /// How many came.
        count: usize,
        /// The most taken.
        max: usize,
    },
}

/// The image in the file at `path` (`shown` as the user wrote it), made
/// fit for a model with long edge `max_edge`.
///
/// # Errors
/// When the file cannot be read, is too large, or is no usable image.
pub fn from_file(path: &Path, shown: &str, max_edge: u32) -> Result<Prepared, AttachError> {
    let read = |source| AttachError::Read {
        path: shown.to_owned(),
        source,
    };
    let size = std::fs::metadata(path).map_err(read)?.len();
    if size > MAX_IMAGE_BYTES as u64 {
        return Err(AttachError::TooLarge {
            what: shown.to_owned(),
            size,
            max: MAX_IMAGE_BYTES,
        });
    }
    let bytes = std::fs::read(path).map_err(read)?;
    etch_image::prepare(bytes, Limits::with_edge(max_edge)).map_err(|source| AttachError::Image {
        what: shown.to_owned(),
        source,
    })
}

/// The image a client sent as base64 `data` of type `mime` (`what` names
/// it in errors: `#2`), made fit for a model. The declared type must be
/// one of the four; the bytes decide which one the image is.
///
/// # Errors
/// When the data is not base64, the type is not taken, or the bytes are
/// no usable image.
pub fn from_base64(
    data: &str,
    mime: &str,
    what: &str,
    max_edge: u32,
) -> Result<Prepared, AttachError> {
    if MediaType::from_mime(mime).is_none() {
        return Err(AttachError::MediaType {
            what: what.to_owned(),
            mime: mime.to_owned(),
        });
    }
    // Base64 is 4/3 of the bytes: a too-long string is refused undecoded.
    let decoded_len = data.len() / 4 * 3;
    if decoded_len > MAX_IMAGE_BYTES {
        return Err(AttachError::TooLarge {
            what: what.to_owned(),
            size: decoded_len as u64,
            max: MAX_IMAGE_BYTES,
        });
    }
    let bytes = etch_model::image::decode_base64(data).ok_or_else(|| AttachError::NotBase64 {
        what: what.to_owned(),
    })?;
    etch_image::prepare(bytes, Limits::with_edge(max_edge)).map_err(|source| AttachError::Image {
        what: what.to_owned(),
        source,
    })
}

/// The `data:` URL of a replayed image (an export embeds it), when its
/// file is there, a plain file, and holds the bytes its hash names.
pub fn replay_data_url(image: &etch_protocol::ReplayImage) -> Option<String> {
    let media_type = MediaType::from_mime(&image.media_type)?;
    if !etch_model::image::is_sha256(&image.sha256) {
        return None;
    }
    let bytes = etch_session::assets::read_file(Path::new(&image.path)).ok()?;
    etch_model::Image::reference(media_type, image.sha256.clone(), image.width, image.height)
        .with_data(bytes)?
        .data_url()
}

/// Refuses more than [`MAX_PROMPT_IMAGES`].
///
/// # Errors
/// When `count` is over the limit.
pub fn check_count(count: usize) -> Result<(), AttachError> {
    if count > MAX_PROMPT_IMAGES {
        return Err(AttachError::TooMany {
            count,
            max: MAX_PROMPT_IMAGES,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use etch_model::image::MediaType;

    use super::*;

    /// A file and a client's base64 of the same bytes give the same image.
    #[test]
    fn files_and_base64_give_the_same_image() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = etch_image::sample(40, 20, MediaType::Png).unwrap();
        let path = dir.path().join("shot.png");
        std::fs::write(&path, &bytes).unwrap();
        let from_file = from_file(&path, "shot.png", 2000).unwrap();
        let encoded = etch_model::Image::new(bytes, MediaType::Png, 40, 20)
            .base64()
            .unwrap();
        let from_client = from_base64(&encoded, "image/png", "#1", 2000).unwrap();
        assert_eq!(from_file.image, from_client.image);
    }

    /// Each bad input says what is wrong with which image.
    #[test]
    fn bad_attachments_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = from_file(&dir.path().join("nope.png"), "nope.png", 2000).unwrap_err();
        assert!(
            missing
                .to_string()
                .starts_with("cannot read image nope.png:"),
            "{missing}"
        );
        let text = dir.path().join("notes.png");
        std::fs::write(&text, "just notes").unwrap();
        let err = from_file(&text, "notes.png", 2000).unwrap_err().to_string();
        assert!(
            err.starts_with("image notes.png: it is not a PNG, JPEG, GIF or WebP image"),
            "{err}"
        );
        let err = from_base64("!!!", "image/png", "#1", 2000)
            .unwrap_err()
            .to_string();
        assert!(err.contains("`data` is not base64"), "{err}");
        let err = from_base64("aGk=", "image/svg+xml", "#2", 2000)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("mimeType \"image/svg+xml\" is not taken"),
            "{err}"
        );
        let err = from_base64("aGk=", "image/png", "#3", 2000)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("image #3: it is not a PNG"), "{err}");
        assert!(check_count(20).is_ok());
        assert!(
            check_count(21)
                .unwrap_err()
                .to_string()
                .contains("at most 20")
        );
    }
}
