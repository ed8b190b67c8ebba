//! Making an image fit for a model, wherever it comes from (a `read`, a
//! prompt's attachment, a client's base64).
//!
//! Every image is decoded once, so a truncated or damaged file is
//! refused here with a clear error instead of by a provider with a 400
//! the model then retries. An image within bounds keeps its original
//! bytes; a larger one is resized (area averaging, the aspect ratio
//! kept) so its long edge is at most the limit, and re-encoded (JPEG
//! stays JPEG, anything else becomes PNG) until its base64 fits the
//! size cap, lowering JPEG quality and then the edge when it must.
//!
//! This crate owns the `image` dependency and nothing else: it must not
//! know where images are stored, which provider gets them, or who asked.

use std::io::Cursor;

use etch_model::{Image, MediaType};
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::{DynamicImage, ImageFormat, ImageReader};

/// The long edge an image is resized to by default: what every provider
/// takes, also in requests with many images (Anthropic lowers its limit
/// from 8000 to 2000 px above 20 images).
pub const DEFAULT_MAX_EDGE: u32 = 2000;

/// The largest long edge any provider takes.
pub const MAX_EDGE_LIMIT: u32 = 8000;

/// The most base64 one image may take: providers cap an image at 5 MB,
/// counted on its base64 encoding.
pub const MAX_BASE64: usize = 5 * 1024 * 1024;

/// The most memory decoding one image may take: a small file that
/// claims enormous dimensions is refused, not allocated.
const MAX_DECODE_ALLOC: u64 = 512 * 1024 * 1024;

/// JPEG qualities tried in turn when an image does not fit the cap.
const JPEG_QUALITIES: [u8; 4] = [85, 70, 55, 40];

/// What an image may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The longest edge, in pixels.
    pub max_edge: u32,
    /// The most base64 the bytes may take.
    pub max_base64: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_edge: DEFAULT_MAX_EDGE,
            max_base64: MAX_BASE64,
        }
    }
}

impl Limits {
    /// Limits with long edge `max_edge` (clamped to 1..=8000) and the
    /// default size cap.
    pub fn with_edge(max_edge: u32) -> Self {
        Self {
            max_edge: max_edge.clamp(1, MAX_EDGE_LIMIT),
            ..Self::default()
        }
    }
}

/// Why an image cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The bytes are no image of the four formats.
    #[error(
        "it is not a PNG, JPEG, GIF or WebP image (its first bytes are {start}); only those formats can be shown to a model"
    )]
    NotAnImage {
        /// The first bytes, shown as text or hex.
        start: String,
    },
    /// The bytes start like an image but do not decode.
    #[error("the {media_type} data is damaged or truncated ({reason}); check the file")]
    Damaged {
        /// The format the bytes claim.
        media_type: MediaType,
        /// What the decoder said.
        reason: String,
    },
    /// Even the smallest encoding tried is over the cap.
    #[error(
        "it cannot be made smaller than {base64} bytes of base64 (the cap is {cap}); crop or scale it down first"
    )]
    TooLarge {
        /// The smallest size reached.
        base64: usize,
        /// The cap.
        cap: usize,
    },
    /// Encoding the resized image failed.
    #[error("could not encode the resized image: {0}")]
    Encode(String),
}

/// An image made fit, with what was done to it.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The image as it will be sent.
    pub image: Image,
    /// The size it came in.
    pub original: (u32, u32),
    /// The format it came in.
    pub original_type: MediaType,
}

impl Prepared {
    /// Whether the image was resized or re-encoded.
    pub fn changed(&self) -> bool {
        self.original != (self.image.width, self.image.height)
            || self.original_type != self.image.media_type
    }

    /// `image/png, 1920x1080 (resized to 1568x882)`: the type and size
    /// it came in, and what it became.
    pub fn summary(&self) -> String {
        format!("{}, {}", self.original_type, self.size_note())
    }

    /// `1920x1080 (resized to 1568x882)`: the size it came in, and what
    /// it became (with the new type when that changed too).
    pub fn size_note(&self) -> String {
        use std::fmt::Write as _;
        let (w, h) = self.original;
        let mut out = format!("{w}x{h}");
        let image = &self.image;
        if self.original == (image.width, image.height) && self.changed() {
            let _ = write!(out, " (re-encoded as {})", image.media_type);
        } else if self.changed() {
            let _ = write!(out, " (resized to {}x{}", image.width, image.height);
            if image.media_type != self.original_type {
                let _ = write!(out, ", {}", image.media_type);
            }
            out.push(')');
        }
        out
    }
}

/// Checks `bytes` decode as a PNG, JPEG, GIF or WebP image and makes them
/// fit `limits`.
///
/// # Errors
/// When the bytes are no such image, do not decode, or cannot be made
/// small enough.
pub fn prepare(bytes: Vec<u8>, limits: Limits) -> Result<Prepared, ImageError> {
    let media_type = MediaType::sniff(&bytes).ok_or_else(|| ImageError::NotAnImage {
        start: describe_start(&bytes),
    })?;
    if media_type == MediaType::Jpeg && !jpeg_ends(&bytes) {
        return Err(ImageError::Damaged {
            media_type,
            reason: "it stops before its end-of-image marker".to_owned(),
        });
    }
    let decoded = decode(&bytes, media_type)?;
    let original = (decoded.width(), decoded.height());
    let within_edge = original.0.max(original.1) <= limits.max_edge;
    let base64 = bytes.len().div_ceil(3) * 4;
    if within_edge && base64 <= limits.max_base64 {
        return Ok(Prepared {
            image: Image::new(bytes, media_type, original.0, original.1),
            original,
            original_type: media_type,
        });
    }
    let image = shrink(&decoded, media_type, limits)?;
    Ok(Prepared {
        image,
        original,
        original_type: media_type,
    })
}

/// `image` with its long edge at most `max_edge`, re-encoded when it is
/// larger (Anthropic's limit in requests of more than 20 images); the
/// same image when it is within it or its bytes are not at hand.
///
/// # Errors
/// When the bytes do not decode or cannot be encoded again.
pub fn fit(image: &Image, max_edge: u32) -> Result<Image, ImageError> {
    let Some(bytes) = image.data() else {
        return Ok(image.clone());
    };
    if image.width.max(image.height) <= max_edge {
        return Ok(image.clone());
    }
    let decoded = decode(bytes, image.media_type)?;
    shrink(&decoded, image.media_type, Limits::with_edge(max_edge))
}

/// Decodes the whole image (so damage anywhere is found), within the
/// allocation limit.
fn decode(bytes: &[u8], media_type: MediaType) -> Result<DynamicImage, ImageError> {
    let damaged = |reason: String| ImageError::Damaged { media_type, reason };
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format_of(media_type));
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(MAX_DECODE_ALLOC);
    reader.limits(limits);
    reader.decode().map_err(|err| damaged(err.to_string()))
}

/// Resizes `decoded` to the edge limit and encodes it until it fits the
/// size cap: first in its own family (JPEG, else PNG), then as JPEG of
/// falling quality, then smaller.
fn shrink(decoded: &DynamicImage, source: MediaType, limits: Limits) -> Result<Image, ImageError> {
    let mut edge = limits.max_edge.min(decoded.width().max(decoded.height()));
    let mut smallest = usize::MAX;
    loop {
        let (w, h) = scaled(decoded.width(), decoded.height(), edge);
        let resized = if (w, h) == (decoded.width(), decoded.height()) {
            decoded.clone()
        } else {
            downscale(decoded, w, h)
        };
        let mut attempts: Vec<(MediaType, u8)> = Vec::new();
        if source == MediaType::Jpeg {
            attempts.extend(JPEG_QUALITIES.iter().map(|q| (MediaType::Jpeg, *q)));
        } else {
            attempts.push((MediaType::Png, 0));
            attempts.extend(JPEG_QUALITIES.iter().map(|q| (MediaType::Jpeg, *q)));
        }
        for (media_type, quality) in attempts {
            let bytes = encode(&resized, media_type, quality)?;
            let base64 = bytes.len().div_ceil(3) * 4;
            if base64 <= limits.max_base64 {
                return Ok(Image::new(bytes, media_type, w, h));
            }
            smallest = smallest.min(base64);
        }
        if edge <= 64 {
            return Err(ImageError::TooLarge {
                base64: smallest,
                cap: limits.max_base64,
            });
        }
        edge = edge * 3 / 4;
    }
}

/// `image` scaled down to `width` × `height` by area averaging (as
/// sharp as a model needs: it sees the picture at this size or smaller):
/// halved 2x2 while it stays at least twice the size (a tight loop over
/// the bytes, several times faster than a general filter on a camera
/// image), then averaged to the exact size.
fn downscale(image: &DynamicImage, width: u32, height: u32) -> DynamicImage {
    let mut current: DynamicImage = if image.color().has_alpha() {
        DynamicImage::ImageRgba8(image.to_rgba8())
    } else {
        DynamicImage::ImageRgb8(image.to_rgb8())
    };
    while current.width() / 2 >= width && current.height() / 2 >= height {
        current = match &current {
            DynamicImage::ImageRgba8(rgba) => DynamicImage::ImageRgba8(halve(rgba)),
            DynamicImage::ImageRgb8(rgb) => DynamicImage::ImageRgb8(halve(rgb)),
            _ => break,
        };
    }
    if (current.width(), current.height()) == (width, height) {
        current
    } else {
        current.thumbnail_exact(width, height)
    }
}

/// `image` at half its size, each pixel the mean of a 2x2 block (an odd
/// last row or column is left out).
fn halve<P>(image: &image::ImageBuffer<P, Vec<u8>>) -> image::ImageBuffer<P, Vec<u8>>
where
    P: image::Pixel<Subpixel = u8>,
{
    let channels = usize::from(P::CHANNEL_COUNT);
    let (w, h) = (image.width() as usize, image.height() as usize);
    let (half_w, half_h) = (w / 2, h / 2);
    let src = image.as_raw();
    let stride = w * channels;
    let mut out = vec![0u8; half_w * half_h * channels];
    for (y, row) in out.chunks_exact_mut(half_w * channels).enumerate() {
        let top = &src[2 * y * stride..][..stride];
        let bottom = &src[(2 * y + 1) * stride..][..stride];
        for x in 0..half_w {
            for c in 0..channels {
                let at = 2 * x * channels + c;
                let sum = u16::from(top[at])
                    + u16::from(top[at + channels])
                    + u16::from(bottom[at])
                    + u16::from(bottom[at + channels]);
                row[x * channels + c] = u8::try_from((sum + 2) / 4).unwrap_or(u8::MAX);
            }
        }
    }
    let (half_w, half_h) = (
        u32::try_from(half_w).unwrap_or(u32::MAX),
        u32::try_from(half_h).unwrap_or(u32::MAX),
    );
    image::ImageBuffer::from_raw(half_w, half_h, out).unwrap_or_else(|| image.clone())
}

/// `width` × `height` scaled so the long edge is `edge` (never below one
/// pixel; never enlarged).
fn scaled(width: u32, height: u32, edge: u32) -> (u32, u32) {
    let long = width.max(height);
    if long <= edge {
        return (width, height);
    }
    let scale = |side: u32| -> u32 {
        let value = u64::from(side) * u64::from(edge) / u64::from(long);
        u32::try_from(value).unwrap_or(u32::MAX).max(1)
    };
    (scale(width), scale(height))
}

/// Encodes `image` as PNG or as JPEG of `quality`.
fn encode(image: &DynamicImage, media_type: MediaType, quality: u8) -> Result<Vec<u8>, ImageError> {
    let mut out = Vec::new();
    let result = if media_type == MediaType::Jpeg {
        // JPEG has no alpha channel.
        let rgb = DynamicImage::ImageRgb8(image.to_rgb8());
        rgb.write_with_encoder(JpegEncoder::new_with_quality(&mut out, quality))
    } else {
        image.write_with_encoder(PngEncoder::new(&mut out))
    };
    result.map_err(|err| ImageError::Encode(err.to_string()))?;
    Ok(out)
}

/// Whether a JPEG's last scan is followed by its end-of-image marker.
/// The JPEG decoder fills a cut-off image with grey rather than fail, and
/// a model shown half a screenshot is misled. Inside a scan every 0xFF
/// byte is stuffed with 0x00, so the last start-of-scan marker (0xFFDA)
/// is the real one, past any embedded thumbnail's.
fn jpeg_ends(bytes: &[u8]) -> bool {
    let Some(scan) = bytes.windows(2).rposition(|w| w == [0xff, 0xda]) else {
        return false;
    };
    bytes[scan..].windows(2).any(|w| w == [0xff, 0xd9])
}

/// The decoder format of `media_type`.
fn format_of(media_type: MediaType) -> ImageFormat {
    match media_type {
        MediaType::Png => ImageFormat::Png,
        MediaType::Jpeg => ImageFormat::Jpeg,
        MediaType::Gif => ImageFormat::Gif,
        MediaType::Webp => ImageFormat::WebP,
    }
}

/// The first bytes of `bytes` for an error: as text when they are text,
/// else in hex.
fn describe_start(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(16)];
    if head.is_empty() {
        return "nothing: the file is empty".to_owned();
    }
    match std::str::from_utf8(head) {
        Ok(text) if !text.chars().any(char::is_control) => format!("{text:?}, text"),
        _ => head
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// Writes an image of `width` × `height` in `media_type` with a pattern
/// that does not compress to nothing, for tests and benchmarks of every
/// crate that takes images.
///
/// # Errors
/// When the encoder fails.
pub fn sample(width: u32, height: u32, media_type: MediaType) -> Result<Vec<u8>, ImageError> {
    let pixels = image::RgbImage::from_fn(width, height, |x, y| {
        // A gradient with some texture: photographs neither compress
        // away nor are pure noise.
        let byte = |v: u32| u8::try_from(v % 256).unwrap_or(0);
        let noise = (x.wrapping_mul(7919) ^ y.wrapping_mul(104_729)) % 37;
        let r = byte(x * 255 / width.max(1));
        let g = byte(y * 255 / height.max(1));
        image::Rgb([r.wrapping_add(byte(noise)), g, byte(x + y)])
    });
    let image = DynamicImage::ImageRgb8(pixels);
    let mut out = Cursor::new(Vec::new());
    let format = format_of(media_type);
    let result = match media_type {
        MediaType::Jpeg => image.write_with_encoder(JpegEncoder::new_with_quality(&mut out, 90)),
        _ => image.write_to(&mut out, format),
    };
    result.map_err(|err| ImageError::Encode(err.to_string()))?;
    Ok(out.into_inner())
}

#[cfg(test)]
mod tests;
