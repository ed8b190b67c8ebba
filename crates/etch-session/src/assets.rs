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

use etch_model::Image;

use crate::error::SessionError;

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

    /// Where `image` is (or would be) stored.
    pub fn path(&self, image: &Image) -> PathBuf {
        self.dir.join(image.file_name())
    }

    /// Stores the bytes of `image` (once: the same bytes are found again)
    /// and returns where they are.
    ///
    /// # Errors
    /// When the image's bytes are not at hand and not stored yet, or the
    /// file cannot be written.
    pub fn store(&self, image: &Image) -> Result<PathBuf, SessionError> {
        let path = self.path(image);
        if path.exists() {
            return Ok(path);
        }
        let Some(bytes) = image.data() else {
            return Err(SessionError::Invalid {
                path,
                reason: "the image's bytes were never loaded, so they cannot be stored".to_owned(),
            });
        };
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
        // Written without a name and named once whole: a reader never
        // sees half an image, and a kill leaves nothing. The same bytes
        // stored meanwhile by another writer are as good as ours.
        let mut new = etch_fs::NewFile::new(&path, crate::PRIVATE_FILE)
            .map_err(|e| io("create", &path)(e.into()))?;
        new.file()
            .write_all(bytes)
            .and_then(|()| new.file().sync_all())
            .map_err(io("write", &path))?;
        match new.publish() {
            Ok(_) => Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(path),
            Err(e) => Err(io("store", &path)(e.into())),
        }
    }

    /// `image` with its bytes loaded from the store, checked against its
    /// hash.
    ///
    /// # Errors
    /// When the file is missing or unreadable, or its bytes are not the
    /// ones stored.
    pub fn load(&self, image: &Image) -> Result<Image, SessionError> {
        let path = self.path(image);
        let bytes = read_file(&path).map_err(|source| SessionError::Io {
            action: "read",
            path: path.clone(),
            source,
        })?;
        image.with_data(bytes).ok_or_else(|| SessionError::Invalid {
            path,
            reason: "the image file changed since it was stored (its hash differs)".to_owned(),
        })
    }
}

impl Assets {
    /// Gives this store the files of the images that `events` refer to
    /// from `origin` (a fork's copies of its origin's events): linked
    /// when both are on one file system, else copied. An image missing
    /// from the origin is left out; resuming replaces it by a marker.
    ///
    /// # Errors
    /// When a file cannot be linked or copied.
    pub fn adopt(
        &self,
        origin: &Self,
        events: &[&crate::event::Event],
    ) -> Result<(), SessionError> {
        for event in events {
            for image in images_of(event) {
                let from = origin.path(&image);
                let to = self.path(&image);
                if to.exists() || !from.exists() {
                    continue;
                }
                if let Ok(loaded) = origin.load(&image)
                    && std::fs::hard_link(&from, &to).is_err()
                {
                    self.store(&loaded)?;
                }
            }
        }
        Ok(())
    }
}

/// The images an event refers to in its `content` parts.
pub fn images_of(event: &crate::event::Event) -> Vec<Image> {
    /// The one field looked at.
    #[derive(serde::Deserialize)]
    struct Parts {
        #[serde(default)]
        content: Vec<serde_json::Value>,
    }
    // Most events have no image; their data is not parsed.
    if !event.data.get().contains("\"image\"") {
        return Vec::new();
    }
    let Ok(parts) = event.parse_data::<Parts>() else {
        return Vec::new();
    };
    parts
        .content
        .into_iter()
        .filter(|part| part.get("type").and_then(serde_json::Value::as_str) == Some("image"))
        .filter_map(|part| serde_json::from_value(part).ok())
        .collect()
}

/// The largest asset file read.
pub const MAX_ASSET_BYTES: u64 = etch_model::image::MAX_IMAGE_BYTES;

/// The bytes of the asset file at `path`: a regular file, not a link (a
/// session that came with a repository may name anything), of at most
/// [`MAX_ASSET_BYTES`].
///
/// # Errors
/// When it is missing, a link, not a regular file, too large, or
/// unreadable.
pub fn read_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let refuse = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_owned());
    if std::fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Err(refuse("it is a link, not an image file"));
    }
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refuse("it is not a regular file"));
    }
    if meta.len() > MAX_ASSET_BYTES {
        return Err(refuse("it is larger than any image etch stores"));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(MAX_ASSET_BYTES).read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::PermissionsExt as _;

    use etch_model::MediaType;

    use super::*;

    /// The smallest PNG header with some bytes after it.
    fn png(tail: &[u8]) -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
        bytes.extend_from_slice(tail);
        bytes
    }

    /// An image is stored once, private to the user, beside the log;
    /// it loads back checked; text is refused; a changed file is named.
    #[test]
    fn images_are_stored_once_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let assets = Assets::of(&dir.path().join("01ABC.jsonl"));
        assert_eq!(assets.dir(), dir.path().join("01ABC.assets"));
        let bytes = png(b"pixels");
        let image = Image::new(bytes.clone(), MediaType::Png, 1, 1);
        let path = assets.store(&image).unwrap();
        assert_eq!(path, assets.dir().join(format!("{}.png", image.sha256)));
        assert_eq!(assets.store(&image).unwrap(), path);
        let reference: Image =
            serde_json::from_value(serde_json::to_value(&image).unwrap()).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(std::fs::read_dir(assets.dir()).unwrap().count(), 1);
        assert_eq!(
            assets.load(&reference).unwrap().data(),
            Some(bytes.as_slice())
        );
        std::fs::write(&path, png(b"other")).unwrap();
        let changed = assets.load(&reference).unwrap_err().to_string();
        assert!(changed.contains("changed since it was stored"), "{changed}");
        std::fs::remove_file(&path).unwrap();
        assert!(assets.load(&reference).is_err());
        let unloaded = assets.store(&reference).unwrap_err().to_string();
        assert!(unloaded.contains("never loaded"), "{unloaded}");
        // A file a repository put there as a link, or a device, is not read.
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        let link = assets.load(&reference).unwrap_err().to_string();
        assert!(link.contains("is a link"), "{link}");
    }
}
