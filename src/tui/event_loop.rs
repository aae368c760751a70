use std::sync::Arc;
use crate::fleet::Fleet;
use super::App;
use super::terminal::TerminalGuard;
pub async fn run(_fleet: Arc<Fleet>, _app: App, _term: &mut TerminalGuard) -> color_eyre::Result<()> { Ok(()) }
