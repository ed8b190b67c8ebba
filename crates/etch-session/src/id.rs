//! ULID generation for session and event ids (C27).
//!
//! ULIDs are 26 Crockford base32 characters, time-sortable, so file listings
//! and the log read in creation order.

/// Returns a fresh ULID string.
pub fn new_id() -> String {
    ulid::Ulid::new().to_string()
}

/// Whether `s` looks like a ULID (26 Crockford base32 characters).
pub fn is_ulid(s: &str) -> bool {
    s.len() == 26 && ulid::Ulid::from_string(s).is_ok()
}

/// The current time as RFC 3339 UTC with milliseconds, the log's `time` field.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Generated ids are valid ULIDs and sort by creation time.
    #[test]
    fn ids_are_ulids_and_sortable() {
        let a = new_id();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_id();
        assert!(is_ulid(&a) && is_ulid(&b));
        assert!(a < b);
        assert!(!is_ulid("index"));
    }
}
