//! Each screen's and overlay's key handling, as `impl App` blocks: what a key does there and
//! the requests it makes. Their state lives on [`super::App`]; their pictures in `tui::views`.

pub mod detail;
mod dialog;
mod gpus;
mod help;
mod history;
mod jobs;
mod nodes;
mod overview;
mod prompt;
mod submit;
mod usage;
