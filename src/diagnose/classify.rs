//! [`classify`]: the one question the scanner and the engine ask of a
//! message. The anchors it holds name the rules it is put to, in their
//! precedence order, and whether the catalogue's entries are asked too.
//!
//! When an entry and a rule both answer one message, one signal is kept:
//! the entry's when both name the same category (it matched the whole
//! message as its component prints it, and its summary is built from
//! captures only), the rule's when they differ (the rules' precedence order
//! holds what one message cannot show: a lookup failing through a mirror is
//! a mirror problem, an expired certificate a clock problem first; the
//! corpus was scored on it). A rule's fact or recovery (`Nature::Observed`,
//! `Nature::Recovery`) is kept over an entry of another nature too: the
//! correlation compares those across lines by the keys the rules give
//! them (`engine.rs`). Each entry's examples are tested to yield the
//! entry, so an entry and a rule that disagree on a line fail that test
//! instead of one of them going silent.

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

/// The entry's signal over the rule's of the same category; the rule's
/// when the categories differ, or when it is a fact or a recovery and the
/// entry is not (this module's doc says why).
fn prefer(entry: Option<Signal>, rules: impl FnOnce() -> Option<Signal>) -> Option<Signal> {
    let Some(entry) = entry else {
        return rules();
    };
    match rules() {
        Some(rule)
            if rule.category != entry.category
                || (matches!(rule.nature, Nature::Observed | Nature::Recovery)
                    && rule.nature != entry.nature) =>
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
