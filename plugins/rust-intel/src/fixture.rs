//! Test fixtures: a small crate's sources and a tempdir laid out like a
//! project (a package, a loose file, and directories the walk skips).

#![allow(clippy::unwrap_used)]

use std::path::Path;

use crate::filter::{Detail, Filters};
use crate::inspect::Query;

/// `demo/src/lib.rs`: one item of every kind.
pub const LIB_RS: &str = r#"//! Demo crate.

/// The most widgets.
pub const LIMIT: usize = 10;

static GREETING: &str = "a greeting that is long enough to be elided from the summary view";

/// Two of a kind.
pub type Pair<T> = (T, T);

/// A thing on screen.
///
/// It has a size.
#[derive(Debug, Clone)]
pub struct Widget {
    pub width: u32,
    height: u32,
    label: Option<String>,
}

/// A point.
pub struct Point(pub i64, pub i64);

struct Marker;

/// Shapes.
#[repr(u8)]
pub enum Shape {
    /// Round.
    Circle(f64),
    Rect { w: f64, h: f64 },
    Empty = 7,
}

union Bits {
    int: u32,
    float: f32,
}

/// Things that draw.
pub trait Render: Send {
    /// Draws.
    fn render(&self, out: &mut String) -> usize;
    fn name(&self) -> &'static str {
        "render"
    }
    type Output;
    const SIDES: u8;
}

impl Widget {
    /// Makes one.
    pub fn new(
        width: u32,
        height: u32,
    ) -> Self {
        Self { width, height, label: None }
    }

    fn area(&self) -> u32 {
        self.width * self.height
    }
}

impl Render for Widget {
    fn render(&self, out: &mut String) -> usize {
        out.push_str("widget");
        6
    }
    type Output = ();
    const SIDES: u8 = 4;
}

impl std::fmt::Display for Widget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "widget")
    }
}

/// Runs free.
pub async fn free_function<T: Clone>(value: T) -> Vec<T>
where
    T: Send,
{
    vec![value]
}

/// Squares.
#[macro_export]
macro_rules! square {
    ($x:expr) => { $x * $x };
    ($x:expr, $y:expr) => { $x * $y };
}

mod inner {
    #[inline]
    fn helper() {}

    pub mod deeper {
        pub fn r#type() {}
    }
}
"#;

/// `demo/src/bad.rs`: does not parse (line 2).
pub const BAD_RS: &str = "fn fine() {}\nstruct 3 {}\n";

/// A tempdir holding `demo/` (package `demo-crate`) and a loose
/// `loose.rs`, plus files under `target`, `node_modules` and a hidden
/// directory that the walk must skip.
pub fn crate_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        (
            "demo/Cargo.toml",
            "[package]\nname = \"demo-crate\"\nversion = \"0.1.0\"\n",
        ),
        ("demo/src/lib.rs", LIB_RS),
        ("demo/src/bad.rs", BAD_RS),
        (
            "demo/src/util/mod.rs",
            "//! Utils.\npub mod deep;\n\n/// Adds.\npub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n",
        ),
        (
            "demo/src/util/deep.rs",
            "/// Deep thought.\npub struct Answer;\n\nimpl Answer {\n    /// Forty-two.\n    pub fn value(&self) -> u32 {\n        42\n    }\n}\n",
        ),
        ("demo/tests/smoke.rs", "#[test]\nfn smoke() {}\n"),
        ("demo/target/debug/gen.rs", "fn generated() {}\n"),
        ("demo/node_modules/x.rs", "fn js() {}\n"),
        ("demo/.hidden/h.rs", "fn hidden() {}\n"),
        ("loose.rs", "fn loose() {}\n"),
        ("notes.txt", "not rust\n"),
    ];
    for (path, text) in files {
        write(&dir.path().join(path), text);
    }
    dir
}

/// Writes `text` to `path`, creating its directories.
fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A query over `paths` with the `crate`, `file` and `name` filters and
/// the detail level.
pub fn query(paths: &[&str], filters: [Option<&str>; 3], detail: Detail) -> Query {
    Query {
        paths: paths.iter().map(|p| (*p).to_owned()).collect(),
        filters: Filters::new(filters[0], filters[1], filters[2]).unwrap(),
        detail,
    }
}
