//! Writes a sample image for the whole-process benchmarks
//! (`bench/images.sh`): `cargo run --release -p etch-image --example
//! sample -- WIDTH HEIGHT png|jpeg|gif|webp OUT`.

use std::process::ExitCode;

use etch_model::MediaType;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [width, height, kind, out] = args.as_slice() else {
        eprintln!("usage: sample WIDTH HEIGHT png|jpeg|gif|webp OUT");
        return ExitCode::from(2);
    };
    let (Ok(width), Ok(height)) = (width.parse::<u32>(), height.parse::<u32>()) else {
        eprintln!("sample: WIDTH and HEIGHT are whole numbers of pixels");
        return ExitCode::from(2);
    };
    let Some(media_type) = MediaType::from_mime(&format!("image/{kind}")) else {
        eprintln!("sample: the format is png, jpeg, gif or webp, not {kind}");
        return ExitCode::from(2);
    };
    match etch_image::sample(width, height, media_type).map(|bytes| std::fs::write(out, bytes)) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("sample: cannot write {out}: {e}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("sample: {e}");
            ExitCode::FAILURE
        }
    }
}
