//! The rules of every family in precedence order, and [`classify`]: the one
//! question the scanner and the engine ask of a message.

use super::signal::Signal;
use super::{net, node, registry, storage, tls};

/// Rules in precedence order: a line that matches several is the first's
/// (a lookup failing through a mirror is a mirror problem; an expired
/// certificate is a clock problem before it is a trust problem).
const RULES: &[fn(&str) -> Option<Signal>] = &[
    registry::mirror,
    tls::clock,
    tls::trust,
    net::proxy,
    net::dns,
    registry::auth,
    storage::full,
    storage::crio_storage,
    storage::etcd,
    net::mcs,
    net::api,
    net::link,
    registry::release,
    node::csr,
    node::selinux,
];

/// The signal of one message (the part after the journal prefix).
pub fn classify(message: &str) -> Option<Signal> {
    RULES.iter().find_map(|rule| rule(message))
}
