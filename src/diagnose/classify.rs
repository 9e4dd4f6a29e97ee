//! [`classify`]: the one question the scanner and the engine ask of a
//! message. The anchors it holds name the rules it is put to, in their
//! precedence order, and whether the catalogue's entries are asked too.
//!
//! When an entry and a rule both answer, the entry's signal is kept: it
//! matched the whole message as its component prints it (more specific than
//! a rule's anchor and branches), its summary is built from captures only,
//! and it is what the entry's examples are tested against. Except when the
//! rule's is a fact or a recovery (`Nature::Observed`, `Nature::Recovery`)
//! and the entry's is not: the correlation compares those across lines by
//! the keys the rules give them (`engine.rs`, `judge_observations`).

use super::anchors::AnchorFinder;
use super::catalogue::{self, CATALOGUE_BIT};
use super::rules::{Dispatch, RULES, UNIT_EVENT_BIT};
use super::signal::{Nature, Signal};

/// The signal of one message (the part after the journal prefix).
pub fn classify(message: &str) -> Option<Signal> {
    classify_with(message, AnchorFinder::get().dispatch(message.as_bytes(), 0))
}

/// The signal of one message, asking only the rules in `dispatch` (and the
/// catalogue when its bit is set).
pub(super) fn classify_with(message: &str, dispatch: Dispatch) -> Option<Signal> {
    let entry = if dispatch & CATALOGUE_BIT == 0 {
        None
    } else {
        catalogue::classify(message)
    };
    prefer(entry, || {
        let mut bits = dispatch & !UNIT_EVENT_BIT & !CATALOGUE_BIT;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if let Some(signal) = (RULES[i].check)(message) {
                return Some(signal);
            }
        }
        None
    })
}

/// The entry's signal over the rule's, but a rule's fact or recovery over
/// an entry of another nature (this module's doc says why).
fn prefer(entry: Option<Signal>, rules: impl FnOnce() -> Option<Signal>) -> Option<Signal> {
    let Some(entry) = entry else {
        return rules();
    };
    match rules() {
        Some(rule)
            if matches!(rule.nature, Nature::Observed | Nature::Recovery)
                && rule.nature != entry.nature =>
        {
            Some(rule)
        }
        _ => Some(entry),
    }
}

/// Every rule and entry, in order, whatever the anchors say (the tests and
/// the fuzz target check that dispatch never loses a signal).
pub fn classify_every_rule(message: &str) -> Option<Signal> {
    prefer(catalogue::classify(message), || {
        RULES.iter().find_map(|rule| (rule.check)(message))
    })
}
