//! `read` of an image file: its bytes, made fit for a model, with one
//! line saying what it is (`Read image file [image/png], 1920x1080
//! (resized to 1568x882)`).
//!
//! A file is an image when its bytes say so, whatever its name; a file
//! named like an image whose bytes are something else is refused,
//! saying what it starts with. Only the read itself lives here: what the
//! pixels become is `etch-image`'s, how the model gets them the
//! provider's.

use std::io::Read as _;

use etch_image::Limits;
use etch_model::Image;
use etch_tool::ToolError;

use crate::cancel;

/// Image extensions: a file with one is read as an image (and refused
/// when its bytes are not one).
pub const IMAGE_EXTENSIONS: [&str; 5] = ["png", "jpg", "jpeg", "gif", "webp"];

/// The largest image file read: a camera's raw PNG is well below it,
/// and decoding anything larger would take seconds and hundreds of MB.
pub const MAX_IMAGE_FILE_BYTES: u64 = etch_model::image::MAX_IMAGE_BYTES;

/// Whether `path`'s extension names an image format.
pub fn has_image_extension(path: &std::path::Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| IMAGE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// Reads the image in `file` (`raw` as the model named it, `size` its
/// length) and makes it fit `max_edge`.
///
/// # Errors
/// When the file is too large, cannot be read, or is no usable image.
pub fn read(
    raw: &str,
    file: std::fs::File,
    size: u64,
    max_edge: u32,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<(String, Image), ToolError> {
    if size > MAX_IMAGE_FILE_BYTES {
        return Err(ToolError::new(format!(
            "{raw} is an image of {} MB, more than the {} MB read takes; scale it down first",
            size / (1024 * 1024),
            MAX_IMAGE_FILE_BYTES / (1024 * 1024)
        )));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(MAX_IMAGE_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::new(format!("cannot read {raw}: {e}")))?;
    if cancel.is_cancelled() {
        return Err(cancel::aborted());
    }
    let prepared = etch_image::prepare(bytes, Limits::with_edge(max_edge))
        .map_err(|e| ToolError::new(format!("cannot read {raw} as an image: {e}")))?;
    let text = format!(
        "Read image file [{}], {}",
        prepared.original_type,
        prepared.size_note()
    );
    Ok((text, prepared.image))
}
