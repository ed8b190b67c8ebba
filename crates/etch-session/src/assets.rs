//! Image bytes kept beside a session log, never in it (a log that held
//! them inline grew to gigabytes and could not be resumed): each image
//! is stored once under `<session>.assets/<sha256>.<ext>`, readable by
//! the user alone, and events refer to it by its hash and media type.
//! Storing the same bytes again finds the file already there. A read
//! checks the bytes against their hash, so a damaged or swapped file is
//! reported, never sent to a model.
//!
//! The media type comes from the bytes (their magic numbers), never from
//! a file name: providers refuse an image whose declared type does not
//! match it.
//!
//! This module must not know what an image shows or who sends it.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::SessionError;

/// The image formats every provider takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
        match mime {
            "image/png" => Some(Self::Png),
            "image/jpeg" | "image/jpg" => Some(Self::Jpeg),
            "image/gif" => Some(Self::Gif),
            "image/webp" => Some(Self::Webp),
            _ => None,
        }
    }

    /// The file extension of a stored asset.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Png => "png",
            Self::Jpeg => "jpg",
            Self::Gif => "gif",
            Self::Webp => "webp",
        }
    }
}

/// A stored image, as an event refers to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asset {
    /// The SHA-256 of its bytes, in lowercase hex.
    pub sha256: String,
    /// Its format.
    pub media_type: MediaType,
}

impl Asset {
    /// Its file name in the assets directory.
    pub fn file_name(&self) -> String {
        format!("{}.{}", self.sha256, self.media_type.extension())
    }
}

/// The assets directory of one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assets {
    /// `<session>.assets` beside the session file.
    dir: PathBuf,
}

impl Assets {
    /// The assets of the session whose log is `session_file`.
    pub fn of(session_file: &Path) -> Self {
        Self {
            dir: session_file.with_extension("assets"),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where `asset` is (or would be) stored.
    pub fn path(&self, asset: &Asset) -> PathBuf {
        self.dir.join(asset.file_name())
    }

    /// Stores `bytes` (once: the same bytes are found again) and returns
    /// the reference to them.
    ///
    /// # Errors
    /// When the bytes are not a PNG, JPEG, GIF or WebP image, or the file
    /// cannot be written.
    pub fn store(&self, bytes: &[u8]) -> Result<Asset, SessionError> {
        let media_type = MediaType::sniff(bytes).ok_or_else(|| SessionError::Invalid {
            path: self.dir.clone(),
            reason: "the data is not a PNG, JPEG, GIF or WebP image".to_owned(),
        })?;
        let asset = Asset {
            sha256: hex(&Sha256::digest(bytes)),
            media_type,
        };
        let path = self.path(&asset);
        if path.exists() {
            return Ok(asset);
        }
        let io = |action: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| SessionError::Io {
                action,
                path,
                source,
            }
        };
        {
            use std::os::unix::fs::DirBuilderExt as _;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(crate::PRIVATE_DIR)
                .create(&self.dir)
                .map_err(io("create", &self.dir))?;
        }
        // Written under a temporary name and renamed: a reader never sees
        // half an image under the final one.
        let partial = self.dir.join(format!(".{}.partial", asset.file_name()));
        let mut file = open_private(&partial).map_err(io("create", &partial))?;
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(io("write", &partial))?;
        std::fs::rename(&partial, &path).map_err(io("store", &path))?;
        Ok(asset)
    }

    /// The bytes of `asset`, checked against its hash.
    ///
    /// # Errors
    /// When the file is missing or unreadable, or its bytes are not the
    /// ones stored.
    pub fn load(&self, asset: &Asset) -> Result<Vec<u8>, SessionError> {
        let path = self.path(asset);
        let bytes = std::fs::read(&path).map_err(|source| SessionError::Io {
            action: "read",
            path: path.clone(),
            source,
        })?;
        if hex(&Sha256::digest(&bytes)) != asset.sha256 {
            return Err(SessionError::Invalid {
                path,
                reason: "the image file changed since it was stored (its hash differs)".to_owned(),
            });
        }
        Ok(bytes)
    }
}

/// Creates `path` for writing, readable and writable by the user alone.
fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(crate::PRIVATE_FILE)
        .open(path)
}

/// `bytes` in lowercase hex.
fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::PermissionsExt as _;

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
        assert_eq!(MediaType::from_mime("image/svg+xml"), None);
    }

    /// An image is stored once, private to the user, beside the log;
    /// it loads back checked; text is refused; a changed file is named.
    #[test]
    fn images_are_stored_once_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let assets = Assets::of(&dir.path().join("01ABC.jsonl"));
        assert_eq!(assets.dir(), dir.path().join("01ABC.assets"));
        let bytes = png(b"pixels");
        let asset = assets.store(&bytes).unwrap();
        assert_eq!(asset.media_type, MediaType::Png);
        assert_eq!(asset.sha256.len(), 64);
        assert_eq!(assets.store(&bytes).unwrap(), asset);
        let path = assets.path(&asset);
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(std::fs::read_dir(assets.dir()).unwrap().count(), 1);
        assert_eq!(assets.load(&asset).unwrap(), bytes);
        let refused = assets.store(b"not an image").unwrap_err().to_string();
        assert!(
            refused.contains("not a PNG, JPEG, GIF or WebP image"),
            "{refused}"
        );
        std::fs::write(&path, png(b"other")).unwrap();
        let changed = assets.load(&asset).unwrap_err().to_string();
        assert!(changed.contains("changed since it was stored"), "{changed}");
        std::fs::remove_file(&path).unwrap();
        assert!(assets.load(&asset).is_err());
    }
}
