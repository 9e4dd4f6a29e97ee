#![no_main]
//! The `reporter.conf` tunables parser (`contract::check_tunables`): never
//! panics, and an error never quotes a value (someone may have put a
//! secret there, which is refused, by name only).

use assisted_boot_reporter::contract::check_tunables;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(message) = check_tunables(text) {
        // Key names are quoted on purpose ("unknown field `X`"); a word that
        // is also part of a key does not count.
        let keys: Vec<&str> = text
            .lines()
            .map(|l| l.split_once('=').map_or(l, |(k, _)| k))
            .collect();
        for line in text.lines() {
            let Some((_, value)) = line.split_once('=') else {
                continue;
            };
            for word in value
                .split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|w| w.len() >= 12)
            {
                if keys.iter().any(|k| k.contains(word)) {
                    continue;
                }
                assert!(!message.contains(word), "error quotes a value: {message}");
            }
        }
    }
});
