//! This kind's native job form, offline: recognise it, import it into a `JobSpec`, export
//! one (`flightdeck spec convert`, `submit` of a native file, migration plans).

use crate::backend::{BackendError, DialectEntry};
use crate::model::{Dialect, Native};
use crate::spec::{ImportError, Imported, JobSpec};

pub fn entry() -> DialectEntry {
    DialectEntry { dialect: Dialect::SkyPilotTask, detect, import, export }
}

pub fn detect(text: &str) -> bool {
    let _ = text;
    false
}

pub fn import(text: &str) -> Result<Imported, ImportError> {
    let _ = text;
    Err(ImportError::new("not yet readable"))
}

pub fn export(spec: &JobSpec) -> Result<Native, BackendError> {
    let _ = spec;
    Err(BackendError::Unsupported("not yet".into()))
}
