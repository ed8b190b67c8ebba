//! Image parts: what a model is shown besides text.
//!
//! An [`Image`] carries its bytes by reference (an `Arc`, cloned freely
//! as messages are copied into requests) together with what identifies
//! them: the media type, told by the bytes' magic numbers and never by
//! a file name (providers refuse an image whose declared type does not
//! match it), their SHA-256, and the pixel size. Only the identifying
//! fields are serialized: the session log refers to the bytes, which
//! the session keeps in a file of their own, so a log never grows by
//! the size of the images it mentions.
//!
//! This module must not know how pixels are decoded or resized, where
//! the bytes are stored, or how a provider puts them on the wire.

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

/// The image formats every provider takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MediaType {
    /// PNG.
    Png,
    /// JPEG.
    Jpeg,
    /// GIF.
    Gif,
    /// WebP.
    Webp,
}

impl MediaType {
    /// The format of `bytes`, by their magic numbers; `None` for anything
    /// else (whatever the file's name says).
    pub fn sniff(bytes: &[u8]) -> Option<Self> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Self::Png)
        } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
            Some(Self::Jpeg)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(Self::Gif)
        } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
            Some(Self::Webp)
        } else {
            None
        }
    }

    /// The MIME type (`image/png`).
    pub fn mime(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Gif => "image/gif",
            Self::Webp => "image/webp",
        }
    }

    /// The type of MIME type `mime`, when it is one of the four.
    pub fn from_mime(mime: &str) -> Option<Self> {
        match mime.trim().to_ascii_lowercase().as_str() {
            "image/png" => Some(Self::Png),
            "image/jpeg" | "image/jpg" => Some(Self::Jpeg),
            "image/gif" => Some(Self::Gif),
            "image/webp" => Some(Self::Webp),
            _ => None,
        }
    }

    /// The file extension of a stored image.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Png => "png",
            Self::Jpeg => "jpg",
            Self::Gif => "gif",
            Self::Webp => "webp",
        }
    }
}

impl fmt::Display for MediaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mime())
    }
}

impl Serialize for MediaType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.mime())
    }
}

impl<'de> Deserialize<'de> for MediaType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mime = String::deserialize(deserializer)?;
        Self::from_mime(&mime).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown image media type {mime:?} (expected image/png, image/jpeg, image/gif or image/webp)"
            ))
        })
    }
}

/// The largest image taken in, as a file or as a client's bytes: far
/// more than any provider takes, so a camera's raw image still goes in
/// to be resized, while nothing can make etch hold an unbounded file.
pub const MAX_IMAGE_BYTES: u64 = 64 << 20;

/// Why an image is left out for a model without vision.
pub const NO_VISION: &str = "this model does not take images (vision = false in its configuration)";

/// Why an image whose bytes are gone is left out.
pub const MISSING: &str = "its file is missing from the session's assets";

/// One image: its identity, and its bytes when they are at hand.
///
/// Serialized (the log's `{"type":"image",…}` part) as
/// `{"mediaType":"image/png","sha256":"…","width":1568,"height":882}`;
/// the bytes are never serialized. An image read back from a log has no
/// bytes until the session loads them from its store; a provider given
/// an image without bytes sends a text marker in its place.
#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "Identity")]
pub struct Image {
    /// The format of the bytes.
    pub media_type: MediaType,
    /// The SHA-256 of the bytes, in lowercase hex.
    pub sha256: String,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// The bytes, shared by every copy of the part.
    #[serde(skip)]
    data: Option<Arc<[u8]>>,
}

/// What a log or a client says of an image, checked before it becomes
/// one: the hash names a file in the session's store, so it must be a
/// hash and nothing else (never a path).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Identity {
    /// The format.
    media_type: MediaType,
    /// The hash: 64 lowercase hex digits.
    sha256: String,
    /// Width.
    width: u32,
    /// Height.
    height: u32,
}

impl TryFrom<Identity> for Image {
    type Error = String;

    fn try_from(identity: Identity) -> Result<Self, Self::Error> {
        if !is_sha256(&identity.sha256) {
            return Err(format!(
                "image sha256 {:?} is not 64 lowercase hex digits",
                identity.sha256
            ));
        }
        Ok(Self::reference(
            identity.media_type,
            identity.sha256,
            identity.width,
            identity.height,
        ))
    }
}

/// Whether `text` is a SHA-256 in lowercase hex.
pub fn is_sha256(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl Image {
    /// An image of `bytes` in `media_type`, `width` × `height` pixels;
    /// its hash is computed here, so it always matches the bytes.
    pub fn new(
        bytes: impl Into<Arc<[u8]>>,
        media_type: MediaType,
        width: u32,
        height: u32,
    ) -> Self {
        let data: Arc<[u8]> = bytes.into();
        Self {
            media_type,
            sha256: sha256_hex(&data),
            width,
            height,
            data: Some(data),
        }
    }

    /// An image known by its identity alone (read from a log or a
    /// client's message): no bytes until they are loaded with
    /// [`Self::with_data`].
    pub fn reference(media_type: MediaType, sha256: String, width: u32, height: u32) -> Self {
        Self {
            media_type,
            sha256,
            width,
            height,
            data: None,
        }
    }

    /// The bytes, when they are loaded.
    pub fn data(&self) -> Option<&[u8]> {
        self.data.as_deref()
    }

    /// This image with `bytes` loaded, when they are the ones its hash
    /// names; `None` otherwise.
    #[must_use]
    pub fn with_data(&self, bytes: impl Into<Arc<[u8]>>) -> Option<Self> {
        let data: Arc<[u8]> = bytes.into();
        (sha256_hex(&data) == self.sha256).then(|| Self {
            data: Some(data),
            ..self.clone()
        })
    }

    /// The bytes in standard base64, when they are loaded.
    pub fn base64(&self) -> Option<String> {
        self.data()
            .map(|bytes| base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    /// The length of the bytes in base64 (what providers' size limits
    /// count), computed without encoding.
    pub fn base64_len(&self) -> usize {
        self.data().map_or(0, |bytes| bytes.len().div_ceil(3) * 4)
    }

    /// A `data:` URL of the bytes, when they are loaded.
    pub fn data_url(&self) -> Option<String> {
        self.base64()
            .map(|data| format!("data:{};base64,{data}", self.media_type.mime()))
    }

    /// A short description for people and for models that cannot see it:
    /// `image/png 1568x882`.
    pub fn describe(&self) -> String {
        format!("{} {}x{}", self.media_type, self.width, self.height)
    }

    /// The text sent in place of this image when it cannot be sent:
    /// `[image omitted (image/png 1568x882): REASON]`.
    pub fn omitted(&self, reason: &str) -> String {
        format!("[image omitted ({}): {reason}]", self.describe())
    }

    /// About how many tokens the image costs a model: its pixels over
    /// 750, after the 1568 px long edge providers scale images down to
    /// (Anthropic's published estimate; OpenAI's tiles come close).
    pub fn estimated_tokens(&self) -> u64 {
        const LONG_EDGE: f64 = 1568.0;
        let (w, h) = (f64::from(self.width), f64::from(self.height));
        let scale = (LONG_EDGE / w.max(h).max(1.0)).min(1.0);
        let pixels = (w * scale) * (h * scale);
        // Rounded to whole tokens; an image is never free.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let tokens = (pixels / 750.0).ceil() as u64;
        tokens.max(85)
    }

    /// What to send for this image: itself, or the marker that stands
    /// for it when the model cannot see images (`no_vision`) or its bytes
    /// are not at hand (a file lost from the session's assets).
    pub fn sendable(&self, no_vision: bool) -> Result<&Self, String> {
        if no_vision {
            Err(self.omitted(NO_VISION))
        } else if self.data.is_none() {
            Err(self.omitted(MISSING))
        } else {
            Ok(self)
        }
    }

    /// The file name the image is stored under: `<sha256>.<ext>`.
    pub fn file_name(&self) -> String {
        format!("{}.{}", self.sha256, self.media_type.extension())
    }
}

impl PartialEq for Image {
    /// Two images are equal when they name the same bytes in the same
    /// way; whether the bytes are loaded does not matter.
    fn eq(&self, other: &Self) -> bool {
        self.media_type == other.media_type
            && self.sha256 == other.sha256
            && self.width == other.width
            && self.height == other.height
    }
}

impl fmt::Debug for Image {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Image")
            .field("media_type", &self.media_type)
            .field("sha256", &self.sha256)
            .field("width", &self.width)
            .field("height", &self.height)
            .field("bytes", &self.data.as_ref().map(|d| d.len()))
            .finish()
    }
}

/// Decodes standard base64 (what Pi's RPC and ACP send), ignoring
/// whitespace a client may have wrapped it with; `None` when it is not
/// base64.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    base64::engine::general_purpose::STANDARD
        .decode(compact.as_bytes())
        .ok()
}

/// The SHA-256 of `bytes` in lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for byte in digest {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The smallest PNG header with some bytes after it.
    fn png(tail: &[u8]) -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
        bytes.extend_from_slice(tail);
        bytes
    }

    /// Formats are told by their bytes, not their names.
    #[test]
    fn media_types_come_from_the_bytes() {
        assert_eq!(MediaType::sniff(&png(b"x")), Some(MediaType::Png));
        assert_eq!(
            MediaType::sniff(&[0xff, 0xd8, 0xff, 0xe0]),
            Some(MediaType::Jpeg)
        );
        assert_eq!(MediaType::sniff(b"GIF89a..."), Some(MediaType::Gif));
        assert_eq!(
            MediaType::sniff(b"RIFF\0\0\0\0WEBPVP8 "),
            Some(MediaType::Webp)
        );
        assert_eq!(MediaType::sniff(b"RIFF\0\0\0\0WAVEfmt "), None);
        assert_eq!(MediaType::sniff(b"just text, named x.png"), None);
        assert_eq!(MediaType::from_mime("image/jpg"), Some(MediaType::Jpeg));
        assert_eq!(MediaType::from_mime("Image/PNG"), Some(MediaType::Png));
        assert_eq!(MediaType::from_mime("image/svg+xml"), None);
    }

    /// The log holds the identity of an image, never its bytes; read
    /// back, the bytes load only when they match the hash.
    #[test]
    fn images_serialize_without_their_bytes() {
        let bytes = png(b"pixels");
        let image = Image::new(bytes.clone(), MediaType::Png, 3, 2);
        let json = serde_json::to_value(&image).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "mediaType": "image/png",
                "sha256": sha256_hex(&bytes),
                "width": 3,
                "height": 2,
            })
        );
        let back: Image = serde_json::from_value(json).unwrap();
        assert_eq!(back, image);
        assert!(back.data().is_none());
        assert!(back.with_data(png(b"other")).is_none());
        let loaded = back.with_data(bytes.clone()).unwrap();
        assert_eq!(loaded.data(), Some(bytes.as_slice()));
        assert_eq!(loaded.base64_len(), loaded.base64().unwrap().len());
        assert!(
            loaded
                .data_url()
                .unwrap()
                .starts_with("data:image/png;base64,iVBORw0KGg")
        );
        let bad: Result<Image, _> = serde_json::from_value(serde_json::json!({
            "mediaType": "image/svg+xml", "sha256": "x", "width": 1, "height": 1
        }));
        assert!(bad.unwrap_err().to_string().contains("image/svg+xml"));
        // A hash names a file: a path in its place is refused.
        let path: Result<Image, _> = serde_json::from_value(serde_json::json!({
            "mediaType": "image/png", "sha256": "../../../etc/passwd", "width": 1, "height": 1
        }));
        assert!(
            path.unwrap_err()
                .to_string()
                .contains("not 64 lowercase hex")
        );
    }

    /// Base64 from clients may be wrapped; junk is refused.
    #[test]
    fn base64_input_is_decoded() {
        assert_eq!(decode_base64("aGVs\nbG8=").unwrap(), b"hello");
        assert!(decode_base64("not base64!").is_none());
    }

    /// The marker says what was left out.
    #[test]
    fn the_marker_describes_the_image() {
        let image = Image::new(png(b""), MediaType::Png, 1568, 882);
        assert_eq!(
            image.omitted("the model cannot see images"),
            "[image omitted (image/png 1568x882): the model cannot see images]"
        );
    }
}
