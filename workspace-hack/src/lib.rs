//! Empty on purpose: this package exists for its manifest, which pins the
//! features the workspace's dev-dependencies add to shared dependencies, so
//! `cargo build --workspace` and `cargo test --workspace` resolve one feature
//! set and share one build (see workspace-hack/Cargo.toml).
