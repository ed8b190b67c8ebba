//! Tests of making images fit: every format, resizing, the size cap and
//! the bad inputs a `read` or a client can bring.

#![allow(clippy::unwrap_used)]

use super::*;

/// Each of the four formats decodes and, within bounds, keeps its bytes.
#[test]
fn small_images_keep_their_bytes() {
    for media_type in [
        MediaType::Png,
        MediaType::Jpeg,
        MediaType::Gif,
        MediaType::Webp,
    ] {
        let bytes = sample(64, 48, media_type).unwrap();
        let prepared = prepare(bytes.clone(), Limits::default()).unwrap();
        assert_eq!(prepared.image.media_type, media_type);
        assert_eq!((prepared.image.width, prepared.image.height), (64, 48));
        assert_eq!(prepared.image.data(), Some(bytes.as_slice()));
        assert!(!prepared.changed());
        assert_eq!(prepared.summary(), format!("{media_type}, 64x48"));
    }
}

/// A large image is resized to the long edge, keeping its aspect ratio
/// and (JPEG) its format; a PNG stays PNG.
#[test]
fn large_images_are_resized() {
    let jpeg = sample(6000, 4000, MediaType::Jpeg).unwrap();
    let prepared = prepare(jpeg, Limits::default()).unwrap();
    assert_eq!((prepared.image.width, prepared.image.height), (2000, 1333));
    assert_eq!(prepared.image.media_type, MediaType::Jpeg);
    assert!(prepared.image.base64_len() <= MAX_BASE64);
    assert_eq!(
        prepared.summary(),
        "image/jpeg, 6000x4000 (resized to 2000x1333)"
    );
    let png = sample(300, 1200, MediaType::Png).unwrap();
    let prepared = prepare(png, Limits::with_edge(600)).unwrap();
    assert_eq!((prepared.image.width, prepared.image.height), (150, 600));
    assert_eq!(prepared.image.media_type, MediaType::Png);
    // The decoded result is itself a valid image of that size.
    let again = prepare(prepared.image.data().unwrap().to_vec(), Limits::default()).unwrap();
    assert_eq!((again.image.width, again.image.height), (150, 600));
}

/// An image over the size cap is re-encoded (a PNG becomes JPEG) until
/// it fits; one that cannot fit is refused with the sizes.
#[test]
fn the_size_cap_is_kept() {
    let png = sample(800, 800, MediaType::Png).unwrap();
    let cap = png.len() / 4;
    let limits = Limits {
        max_edge: 2000,
        max_base64: cap,
    };
    let prepared = prepare(png, limits).unwrap();
    assert!(prepared.image.base64_len() <= cap);
    assert_eq!(prepared.image.media_type, MediaType::Jpeg);
    assert_eq!(
        prepared.summary(),
        "image/png, 800x800 (re-encoded as image/jpeg)"
    );
    let tiny = Limits {
        max_edge: 2000,
        max_base64: 8,
    };
    let err = prepare(sample(100, 100, MediaType::Png).unwrap(), tiny).unwrap_err();
    assert!(err.to_string().contains("cap is 8"), "{err}");
}

/// Text named like an image, an empty file and a truncated image are
/// refused, each saying what is wrong.
#[test]
fn bad_images_are_refused_clearly() {
    let text = prepare(b"hello, I am not a picture".to_vec(), Limits::default()).unwrap_err();
    assert!(
        text.to_string().contains(
            "not a PNG, JPEG, GIF or WebP image (its first bytes are \"hello, I am not \", text)"
        ),
        "{text}"
    );
    let empty = prepare(Vec::new(), Limits::default()).unwrap_err();
    assert!(empty.to_string().contains("the file is empty"), "{empty}");
    for media_type in [
        MediaType::Png,
        MediaType::Jpeg,
        MediaType::Gif,
        MediaType::Webp,
    ] {
        let mut bytes = sample(200, 100, media_type).unwrap();
        bytes.truncate(bytes.len() / 2);
        let err = prepare(bytes, Limits::default()).unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("the {media_type} data is damaged or truncated")),
            "{media_type}: {err}"
        );
    }
}

/// `fit` lowers the edge of a loaded image and leaves others alone.
#[test]
fn fit_lowers_the_edge() {
    let big = prepare(
        sample(3000, 1000, MediaType::Png).unwrap(),
        Limits::with_edge(8000),
    )
    .unwrap();
    assert_eq!(big.image.width, 3000);
    let fitted = fit(&big.image, 2000).unwrap();
    assert_eq!((fitted.width, fitted.height), (2000, 666));
    let same = fit(&fitted, 2000).unwrap();
    assert_eq!(same, fitted);
}

/// Edges scale with the ratio and never reach zero.
#[test]
fn scaling_keeps_the_ratio() {
    assert_eq!(scaled(1920, 1080, 1568), (1568, 882));
    assert_eq!(scaled(10, 10, 20), (10, 10));
    assert_eq!(scaled(10_000, 1, 100), (100, 1));
}

/// Halving averages each 2x2 block, leaves an odd last row and column
/// out, and keeps alpha.
#[test]
fn halving_averages_blocks() {
    let image = image::RgbaImage::from_fn(5, 3, |x, y| {
        let v = u8::try_from(x * 10 + y * 100).unwrap();
        image::Rgba([v, v, v, 200])
    });
    let half = halve(&image);
    assert_eq!(half.dimensions(), (2, 1));
    // (0 + 10 + 100 + 110) / 4 = 55; (20 + 30 + 120 + 130) / 4 = 75.
    assert_eq!(half.get_pixel(0, 0).0, [55, 55, 55, 200]);
    assert_eq!(half.get_pixel(1, 0).0, [75, 75, 75, 200]);
    let rgba = DynamicImage::ImageRgba8(image::RgbaImage::new(1000, 400));
    let scaled = downscale(&rgba, 300, 120);
    assert_eq!((scaled.width(), scaled.height()), (300, 120));
    assert!(scaled.color().has_alpha());
}
