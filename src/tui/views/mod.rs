//! Drawing: `render(app, frame)` lays out the header, the current screen, the status and
//! footer lines and the overlays (help, dialog, toasts). Views only read the `App`.
use ratatui::Frame;
use super::App;
pub fn render(_app: &App, _frame: &mut Frame) {}
