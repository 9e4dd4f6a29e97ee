#![no_main]
//! What the service sends back: a host list (`Vec<api::Host>`, then the
//! stage decision on each host, for the first boot and later ones), and an
//! error body turned into the one-line reason the journal shows. Never
//! panics; the reason is short, single-line and printable.

use assisted_boot_reporter::api::{describe_error_body, Host};
use assisted_boot_reporter::stage;
use libfuzzer_sys::fuzz_target;

/// `api::MAX_REASON_CHARS` and the ellipsis.
const MAX_REASON_CHARS: usize = 301;

fuzz_target!(|data: &[u8]| {
    if let Ok(hosts) = serde_json::from_slice::<Vec<Host>>(data) {
        for host in &hosts {
            let _ = host.current_stage();
            let _ = host.progress_info();
            for boot in [1, 2, 3, u32::MAX] {
                let _ = stage::decide(boot, host);
            }
        }
    }
    let reason = describe_error_body(data);
    assert!(!reason.is_empty());
    assert!(reason.chars().count() <= MAX_REASON_CHARS, "{reason}");
    assert!(!reason.chars().any(char::is_control), "{reason:?}");
});
