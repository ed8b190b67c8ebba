//! Making a 12 MP camera JPEG fit for a model (decode, resize to the
//! 2000 px long edge, encode), against decoding it alone: the ratio says
//! what the resize and the encode add to the decode no one can skip.

#![allow(missing_docs, clippy::unwrap_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use etch_image::{Limits, prepare, sample};
use etch_model::MediaType;

/// Registers the benchmarks.
fn bench(c: &mut Criterion) {
    let jpeg = sample(4000, 3000, MediaType::Jpeg).unwrap();
    let small = sample(1600, 1200, MediaType::Jpeg).unwrap();
    let mut group = c.benchmark_group("image");
    group.sample_size(10);
    group.bench_function("prepare_12mp_jpeg", |b| {
        b.iter(|| prepare(jpeg.clone(), Limits::default()).unwrap());
    });
    group.bench_function("check_2mp_jpeg_within_bounds", |b| {
        b.iter(|| prepare(small.clone(), Limits::default()).unwrap());
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
