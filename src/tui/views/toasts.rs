//! Action results, bottom right of the screen, newest at the bottom.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::widgets::Clear;

use super::put;
use crate::tui::app::App;
use crate::tui::theme::Slot;
use crate::tui::widgets::text;

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let theme = app.theme();
    let toasts = app.toasts();
    if toasts.is_empty() || area.height < 3 {
        return;
    }
    let max_w = (area.width.saturating_sub(4)).min(70) as usize;
    let n = toasts.len().min(area.height as usize - 2);
    let bottom = area.y + area.height - 1;
    for (i, t) in toasts.iter().rev().take(n).enumerate() {
        let msg = format!(" {} ", text::clean(&t.text));
        let w = text::width(&msg).min(max_w) as u16;
        let rect = Rect { x: area.x + area.width - 1 - w, y: bottom - 1 - i as u16, width: w, height: 1 };
        frame.render_widget(Clear, rect);
        let style = theme.style(if t.error { Slot::ToastError } else { Slot::ToastOk });
        frame.buffer_mut().set_style(rect, style);
        put(frame.buffer_mut(), rect.x, rect.y, w, &msg, style);
    }
}
