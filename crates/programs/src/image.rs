//! Images a model can see: PNG, JPEG, GIF and WebP, known by their first
//! bytes, at most [`MAX_BYTES`] — the model API's 5 MB once encoded.

use base64::Engine as _;
use std::path::Path;

/// The largest image file sent: 5 MB (the API's limit) once base64
/// makes four bytes of every three.
pub const MAX_BYTES: u64 = 5 * 1024 * 1024 / 4 * 3;

/// An image, encoded for a request.
#[derive(Clone, Debug, PartialEq)]
pub struct Image {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: &'static str,
    /// The bytes, base64.
    pub data: String,
    /// The file's size in bytes.
    pub bytes: u64,
}

/// The media type of an image in a format models read, by its first
/// bytes.
pub fn media_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Whether `path`'s name is an image's (`.png`, `.jpg`, `.jpeg`, `.gif`,
/// `.webp`, any case).
pub fn named_as_image(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        ["png", "jpg", "jpeg", "gif", "webp"].contains(&e.to_ascii_lowercase().as_str())
    })
}

/// Why an image cannot be sent (`shown`: the path as the person or the
/// model gave it).
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// No such file.
    #[error("{shown} does not exist")]
    Missing {
        /// The path as given.
        shown: String,
    },
    /// It could not be read.
    #[error("cannot read {shown}: {source}")]
    Unreadable {
        /// The path as given.
        shown: String,
        /// Why.
        source: std::io::Error,
    },
    /// Larger than a model takes.
    #[error(
        "{shown} is {:.1} MB; an image may be at most {:.2} MB (5 MB once encoded, the model \
         API's limit): make it smaller",
        *.bytes as f64 / 1_048_576.0,
        MAX_BYTES as f64 / 1_048_576.0
    )]
    TooBig {
        /// The path as given.
        shown: String,
        /// Its size.
        bytes: u64,
    },
    /// Not a PNG, JPEG, GIF or WebP file.
    #[error("{shown} is not an image a model can see: give a PNG, JPEG, GIF or WebP file")]
    NotAnImage {
        /// The path as given.
        shown: String,
    },
}

/// Reads an image file; an error says why it cannot be sent (`shown` is
/// the path as the person or model gave it).
pub fn load(path: &Path, shown: &str) -> Result<Image, ImageError> {
    let shown_ = || shown.to_owned();
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ImageError::Missing { shown: shown_() },
        _ => ImageError::Unreadable {
            shown: shown_(),
            source: e,
        },
    })?;
    if meta.len() > MAX_BYTES {
        return Err(ImageError::TooBig {
            shown: shown_(),
            bytes: meta.len(),
        });
    }
    let bytes = std::fs::read(path).map_err(|e| ImageError::Unreadable {
        shown: shown_(),
        source: e,
    })?;
    let Some(media_type) = media_type(&bytes) else {
        return Err(ImageError::NotAnImage { shown: shown_() });
    };
    Ok(Image {
        media_type,
        data: base64::engine::general_purpose::STANDARD.encode(&bytes),
        bytes: bytes.len() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_known_by_their_first_bytes() {
        assert_eq!(media_type(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(media_type(&[0xff, 0xd8, 0xff, 0xe0]), Some("image/jpeg"));
        assert_eq!(media_type(b"GIF89a.."), Some("image/gif"));
        assert_eq!(media_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(media_type(b"%PDF-1.7"), None);
        assert!(named_as_image(Path::new("a/shot.PNG")));
        assert!(!named_as_image(Path::new("notes.txt")));
    }

    #[test]
    fn a_file_too_big_or_not_an_image_is_refused_with_why() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.png");
        std::fs::write(&big, vec![0u8; MAX_BYTES as usize + 1]).unwrap();
        let err = load(&big, "big.png").unwrap_err().to_string();
        assert!(err.contains("at most 3.75 MB"), "{err}");
        let fake = dir.path().join("fake.png");
        std::fs::write(&fake, b"not an image").unwrap();
        assert!(
            load(&fake, "fake.png")
                .unwrap_err()
                .to_string()
                .contains("PNG, JPEG, GIF or WebP")
        );
        let png = dir.path().join("one.png");
        std::fs::write(&png, b"\x89PNG\r\n\x1a\nrest").unwrap();
        let image = load(&png, "one.png").unwrap();
        assert_eq!(image.media_type, "image/png");
        assert_eq!(image.data, "iVBORw0KGgpyZXN0");
    }
}
