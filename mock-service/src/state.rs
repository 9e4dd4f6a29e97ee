//! What every handler shares: the mode, the world behind its lock, the fault
//! queue and the request journal. Its own module so that handlers depend on
//! it and the crate root (which wires the handlers into a router) depends on
//! them, never the other way round.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::{faults, model, requests};

/// State shared by all handlers.
pub(crate) struct AppState {
    pub mode: model::Mode,
    pub data_dir: PathBuf,
    pub max_upload_bytes: u64,
    pub hosted: bool,
    pub world: Mutex<model::World>,
    pub faults: faults::FaultQueue,
    pub journal: Arc<requests::Journal>,
}

pub(crate) type Shared = Arc<AppState>;
