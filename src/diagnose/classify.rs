//! [`classify`]: the one question the scanner and the engine ask of a
//! message. The anchors it holds name the rules it is put to, in their
//! precedence order, and whether the catalogue's entries are asked too.
//!
//! A rule that answers keeps the message: the rules hold what one message
//! cannot show (a lookup failing through a mirror is a mirror problem, an
//! expired certificate a clock problem first), their facts and recoveries
//! are compared across lines by the keys they give (`engine.rs`), and the
//! corpus was scored on them. The catalogue's entries speak for every
//! message no rule reads, which is most of what upstream components print;
//! asking them only then also keeps their automaton off the lines the
//! rules already took. Each entry's examples are tested to yield the entry
//! or a rule of the same category, so an entry and a rule that disagree on
//! a line fail that test instead of one of them going silent.

use super::anchors::AnchorFinder;
use super::catalogue::{self, CATALOGUE_BIT};
use super::rules::{Dispatch, RULES, UNIT_EVENT_BIT};
use super::signal::Signal;

/// The signal of one message (the part after the journal prefix).
pub fn classify(message: &str) -> Option<Signal> {
    classify_with(message, AnchorFinder::get().dispatch(message.as_bytes(), 0))
}

/// The signal of one message, asking only the rules in `dispatch` (and the
/// catalogue when its bit is set).
pub(super) fn classify_with(message: &str, dispatch: Dispatch) -> Option<Signal> {
    let rules = {
        let mut bits = dispatch & !UNIT_EVENT_BIT & !CATALOGUE_BIT;
        let mut found = None;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if let Some(signal) = (RULES[i].check)(message) {
                found = Some(signal);
                break;
            }
        }
        found
    };
    prefer(rules, || {
        if dispatch & CATALOGUE_BIT == 0 {
            None
        } else {
            catalogue::classify(message)
        }
    })
}

/// The rules' answer, else the catalogue's (this module's doc says why).
fn prefer(rules: Option<Signal>, entry: impl FnOnce() -> Option<Signal>) -> Option<Signal> {
    rules.or_else(entry)
}

/// Every rule and entry, in order, whatever the anchors say (the tests and
/// the fuzz target check that dispatch never loses a signal).
pub fn classify_every_rule(message: &str) -> Option<Signal> {
    prefer(RULES.iter().find_map(|rule| (rule.check)(message)), || {
        catalogue::classify(message)
    })
}
