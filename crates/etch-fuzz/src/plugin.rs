//! `plugin_line`: arbitrary bytes as what a plugin writes to stdout,
//! line by line, while etch waits for the answer to one request. Each
//! line is that answer, skipped, or an error that is one short line (it
//! is shown to the user, so a plugin's output cannot flood or drive the
//! terminal through it).

/// The longest error text a plugin's line may cause, in characters.
const MAX_ERROR_CHARS: usize = 400;

/// Checks one input.
pub fn check(data: &[u8]) {
    for line in data.split(|&b| b == b'\n') {
        let text = String::from_utf8_lossy(line);
        if let Err(why) = etch_plugins::read_answer_line(&text, "7", "tool.execute") {
            assert!(!why.contains('\n'), "an error spans lines: {why:?}");
            assert!(
                why.chars().count() <= MAX_ERROR_CHARS,
                "an error of {} characters",
                why.chars().count()
            );
        }
    }
}
