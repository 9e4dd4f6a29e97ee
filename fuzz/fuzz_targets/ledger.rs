#![no_main]
//! `ledger::Ledger::parse`: the state file every start reads, from arbitrary
//! bytes (a disk error, a hand edit, a tool that rewrote it). Never panics;
//! a ledger it accepts holds only values in range, and what a run then does
//! with it (place this boot, measure the spent budget at any clock, keep a
//! checkpoint) never panics either, numbers boots without wrapping, and
//! writes back a ledger the next start accepts.

use std::time::{Duration, SystemTime};

use assisted_boot_reporter::ledger::{Ledger, MAX_BOOTS, MAX_SECS};
use libfuzzer_sys::fuzz_target;

/// A boot ID no ledger seed holds: the run's boot is a new one.
const NEW_BOOT: &str = "0f0f0f0f-1111-4222-8333-444444444444";

fn in_range(secs: f64) -> bool {
    secs.is_finite() && (0.0..=MAX_SECS).contains(&secs)
}

fuzz_target!(|data: &[u8]| {
    // The first 17 bytes are the run's view of the host (clock, uptime,
    // which boot); the rest is the file.
    let (run, file) = data.split_at(data.len().min(17));
    let Ok(mut ledger) = Ledger::parse(file) else {
        return;
    };
    assert!(ledger.check().is_ok());
    assert!(ledger.boots.len() <= MAX_BOOTS);
    assert!(ledger.first_start_unix.is_none_or(in_range));
    assert!(in_range(ledger.spent_checkpoint_secs));
    for boot in &ledger.boots {
        assert!(in_range(boot.first_seen_uptime_secs));
        assert!(boot.spent_at_first_seen_secs.is_none_or(in_range));
    }

    let mut word = [0u8; 8];
    let mut take = |at: usize| {
        word = [0; 8];
        for (i, b) in run.iter().skip(at).take(8).enumerate() {
            word[i] = *b;
        }
        u64::from_le_bytes(word)
    };
    let now_secs = take(0) % (MAX_SECS as u64 + 1);
    // An uptime as `ledger::read_uptime` hands it over: in range or none.
    let uptime = Some(f64::from_bits(take(8))).filter(|u| in_range(*u));
    let existing = run.get(16).is_some_and(|b| b & 1 == 1);
    let boot = match ledger.boots.last() {
        Some(last) if existing => last.boot_id.clone(),
        _ => NEW_BOOT.to_owned(),
    };
    let dropped = ledger.dropped;
    let (number, _) = ledger.observe(&boot, "2026-11-22T10:00:00Z".into(), uptime.unwrap_or(0.0));
    assert!(number >= 1);
    if dropped == u32::MAX {
        assert_eq!(number, u32::MAX, "the boot number wrapped");
    }
    assert!(ledger.boots.len() <= MAX_BOOTS);

    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(now_secs);
    let (spent, _) = ledger.budget_spent(&boot, now, uptime);
    assert!(spent.as_secs_f64() <= MAX_SECS);
    ledger.checkpoint_spent(spent);
    let (again, _) = ledger.budget_spent(&boot, now, uptime);
    assert!(
        again >= spent || spent - again < Duration::from_millis(1),
        "the budget shrank"
    );

    // What this run saves, the next start reads.
    let saved = serde_json::to_vec_pretty(&ledger).expect("serializable");
    if let Err(err) = Ledger::parse(&saved) {
        panic!("the next start refuses what this run saved: {err}");
    }
});
