//! Output limits of the built-in tools (G10) and the shared truncation helper.

/// Most lines `read` returns.
pub const READ_MAX_LINES: usize = 2000;
/// Most bytes `read` returns.
pub const READ_MAX_BYTES: usize = 51_200;
/// Most bytes of formatted `ls`, `find` and `grep` output.
pub const LISTING_MAX_BYTES: usize = 51_200;
/// Most bytes of an `edit` or `write` diff.
pub const DIFF_MAX_BYTES: usize = 20_480;
/// Bytes kept of each `bash` stream (its tail).
pub const BASH_STREAM_MAX_BYTES: usize = 65_536;
/// Default most bytes of one `bash` stream kept in its spill file
/// (`[tools.bash] max_spill_bytes`, E-CFG-25): 64 MiB.
pub const BASH_DEFAULT_MAX_SPILL_BYTES: u64 = 64 * 1024 * 1024;
/// Default `bash` timeout in seconds.
pub const BASH_DEFAULT_TIMEOUT_SECS: u64 = 30;
/// Largest `bash` timeout in seconds.
pub const BASH_MAX_TIMEOUT_SECS: u64 = 120;
/// Default `ls` entry limit.
pub const LS_DEFAULT_LIMIT: usize = 500;
/// Default `find` result limit.
pub const FIND_DEFAULT_LIMIT: usize = 1000;
/// Default `grep` match limit (total).
pub const GREP_DEFAULT_LIMIT: usize = 100;
/// `grep` matches shown per file.
pub const GREP_PER_FILE: usize = 20;
/// Files larger than this are skipped by `grep`.
pub const GREP_MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Rendered `grep` lines are cut at this many characters.
pub const GREP_MAX_LINE_CHARS: usize = 2000;
/// Recursion depth of `find` and `grep`.
pub const MAX_DEPTH: usize = 32;

/// Largest index `<= at` that is a char boundary of `s`.
pub fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    let mut i = at;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Cuts formatted listing output to [`LISTING_MAX_BYTES`] at a line boundary,
/// appending a notice when it had to cut.
pub fn cap_listing(text: String) -> String {
    if text.len() <= LISTING_MAX_BYTES {
        return text;
    }
    let cut = floor_char_boundary(&text, LISTING_MAX_BYTES);
    let end = text[..cut].rfind('\n').unwrap_or(cut);
    format!(
        "{}\n\n[Output truncated at {LISTING_MAX_BYTES} bytes. Use a narrower path, pattern or limit.]",
        &text[..end]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Listings are cut on a line boundary with a notice; short ones untouched.
    #[test]
    fn listing_cap() {
        assert_eq!(cap_listing("a\nb".into()), "a\nb");
        let long = "0123456789\n".repeat(10_000);
        let capped = cap_listing(long);
        assert!(capped.len() < LISTING_MAX_BYTES + 200);
        assert!(capped.ends_with("Use a narrower path, pattern or limit.]"));
        assert!(capped.starts_with("0123456789\n"));
    }

    /// Boundaries never split a UTF-8 character.
    #[test]
    fn char_boundary() {
        let s = "aé";
        assert_eq!(floor_char_boundary(s, 2), 1);
        assert_eq!(floor_char_boundary(s, 9), 3);
    }
}
