//! [`classify`]: the one question the scanner and the engine ask of a
//! message. The anchors it holds name the rules it is put to, in their
//! precedence order; the first that answers gives the signal.

use super::anchors::AnchorFinder;
use super::rules::{Dispatch, RULES, UNIT_EVENT_BIT};
use super::signal::Signal;

/// The signal of one message (the part after the journal prefix).
pub fn classify(message: &str) -> Option<Signal> {
    classify_with(message, AnchorFinder::get().dispatch(message.as_bytes(), 0))
}

/// The signal of one message, asking only the rules in `dispatch`.
pub(super) fn classify_with(message: &str, dispatch: Dispatch) -> Option<Signal> {
    let mut bits = dispatch & !UNIT_EVENT_BIT;
    while bits != 0 {
        let i = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        if let Some(signal) = (RULES[i].check)(message) {
            return Some(signal);
        }
    }
    None
}

/// Every rule, in order, whatever the anchors say (the tests and the fuzz
/// target check that dispatch never loses a signal).
pub fn classify_every_rule(message: &str) -> Option<Signal> {
    RULES.iter().find_map(|rule| (rule.check)(message))
}
