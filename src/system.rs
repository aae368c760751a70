//! What this machine's operating system says, for any module that needs it (the server,
//! the backends): kept apart so none of them imports another for it.

pub mod host;
pub mod user;
