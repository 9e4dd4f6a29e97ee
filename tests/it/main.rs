//! The integration tests, one binary (one link, one build of the shared
//! harness in `tests/common/`): the real agent binary against the real mock
//! on 127.0.0.1, a module per concern. `cargo test --test it faults::` runs
//! one module; `tests/qemu_arch.rs` stays apart (`packaging/build-all` runs
//! it against its cross builds).

#[path = "../common/mod.rs"]
mod common;
#[path = "../ignition_engine/mod.rs"]
mod ignition_engine;

mod bundle_readers;
mod by_hand;
mod collection;
mod crash;
mod diagnosis;
mod disk_inputs;
mod faults;
mod flows;
mod herd;
mod ignition;
mod inspect_cluster;
mod journal_cycles;
mod lifecycle;
mod manpage;
mod offline_root;
mod proxy;
mod secrets;
mod systemd_unit;
mod tls;
mod tools;
mod upstream_compat;
mod usage;
