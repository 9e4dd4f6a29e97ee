#![no_main]
//! `contract::parse_credentials`: the pull secret file (or a bare token) the
//! discovery agent left. Never panics; what it returns can be used (a
//! non-empty token, and the token among the strings the bundle scrubs); an
//! error never quotes the input, so a malformed pull secret cannot end up in
//! the journal. A byte order mark in front changes nothing (the file reader,
//! `bounded_read`, strips one; the parser does too, for the environment).

use assisted_boot_reporter::bounded_read::strip_bom;
use assisted_boot_reporter::contract::parse_credentials;
use libfuzzer_sys::fuzz_target;

/// Runs of 12+ alphanumerics: no fixed word of the error messages is that
/// long, so finding one in a message means the input was quoted.
fn long_words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() >= 12)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if strip_bom(text.trim_start()) == text.trim_start() {
        let outcome = |t: &str| parse_credentials(t).map(|c| c.token.expose().to_owned());
        assert_eq!(
            outcome(&format!("\u{feff}{text}")),
            outcome(text),
            "a byte order mark changed the outcome"
        );
    }
    match parse_credentials(text) {
        Ok(creds) => {
            let token = creds.token.expose();
            assert!(!token.is_empty(), "empty token accepted");
            assert_eq!(token.trim(), token, "token with surrounding blanks");
            assert!(
                creds.scrub.iter().any(|s| s.expose() == token),
                "the token sent is not among the scrubbed secrets"
            );
            // Short tokens occur in any text ("R" in "REDACTED").
            if token.len() >= 12 {
                assert!(
                    !format!("{creds:?}").contains(token),
                    "Debug shows the token"
                );
            }
        }
        Err(message) => {
            for word in long_words(text) {
                assert!(!message.contains(word), "error quotes the input: {message}");
            }
        }
    }
});
