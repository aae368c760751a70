//! The confirmation dialog: what will be done, to exactly which targets (as captured when it
//! opened), the reason field for a drain, and the keys.

use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::{block, centered};
use crate::tui::action::{Mode, UiAction};
use crate::tui::app::App;
use crate::tui::theme::Slot;
use crate::tui::widgets::text;

/// The key for `action` in a dialog. While the dialog takes text (the drain reason), plain
/// characters are text, so the first key that is not one is shown (`enter`, not `y`).
pub fn dialog_key(app: &App, action: UiAction) -> Option<String> {
    let typing = app.dialog().is_some_and(|d| d.reason().is_some());
    if !typing {
        return app.keymap().hint(Mode::Dialog, action);
    }
    app.keymap()
        .bindings(Mode::Dialog)
        .into_iter()
        .chain(app.keymap().bindings(Mode::Global))
        .find(|(key, a)| *a == action && key.chars().count() > 1)
        .map(|(key, _)| key)
}

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let Some(dialog) = app.dialog() else { return };
    let theme = app.theme();
    let targets = dialog.targets();
    let reason = dialog.reason();
    let warning = dialog.warning();
    let extra = 3
        + u16::from(reason.is_some()) * 2
        + u16::from(app.read_only())
        + u16::from(dialog.error().is_some())
        + u16::from(warning.is_some());
    let want_h = (targets.len() as u16).saturating_add(extra + 2);
    let rect = centered(area, area.width.saturating_sub(4).min(72), want_h.min(area.height));
    frame.render_widget(Clear, rect);
    let b = block(app, format!(" {} ", dialog.title()), true);
    let inner = b.inner(rect);
    frame.render_widget(b, rect);
    let w = inner.width as usize;

    let mut lines: Vec<Line> = Vec::new();
    if app.read_only() {
        lines.push(Line::styled(
            text::truncate("READ-ONLY: the fleet will refuse this", w).into_owned(),
            theme.style(Slot::Warning),
        ));
    }
    // Room for the targets: what is left after the fixed lines.
    if let Some(warning) = warning {
        lines.push(Line::styled(text::truncate(warning, w).into_owned(), theme.style(Slot::Warning)));
    }
    let fixed = lines.len() + 2 + if reason.is_some() { 2 } else { 0 } + usize::from(dialog.error().is_some());
    let room = (inner.height as usize).saturating_sub(fixed).max(1);
    let shown = if targets.len() > room { room.saturating_sub(1).max(1) } else { targets.len() };
    for t in targets.iter().take(shown) {
        lines.push(Line::raw(text::truncate(&format!("  {t}"), w).into_owned()));
    }
    if shown < targets.len() {
        lines.push(Line::styled(format!("  … and {} more", targets.len() - shown), theme.style(Slot::Dim)));
    }
    let mut cursor = None;
    if let Some(r) = reason {
        lines.push(Line::raw(""));
        let label = "reason: ";
        let value = text::truncate(r.text(), w.saturating_sub(label.len())).into_owned();
        let before: String = r.text().chars().take(r.cursor()).collect();
        cursor = Some((lines.len(), label.len() + text::width(&before)));
        lines.push(Line::from(vec![Span::styled(label, theme.style(Slot::FooterKey)), Span::raw(value)]));
    }
    if let Some(e) = dialog.error() {
        lines.push(Line::styled(text::truncate(e, w).into_owned(), theme.style(Slot::Error)));
    }
    lines.push(Line::raw(""));
    let key = |a: UiAction| dialog_key(app, a).unwrap_or_else(|| "?".into());
    lines.push(Line::from(vec![
        Span::styled(key(UiAction::Confirm), theme.style(Slot::FooterKey)),
        Span::raw(" confirm   "),
        Span::styled(key(UiAction::Dismiss), theme.style(Slot::FooterKey)),
        Span::raw(" dismiss"),
    ]));
    frame.render_widget(Paragraph::new(lines).style(theme.style(Slot::Base)), inner);
    if let Some((row, col)) = cursor {
        let (x, y) = (inner.x + col as u16, inner.y + row as u16);
        if x < inner.x + inner.width && y < inner.y + inner.height {
            super::text_cursor(frame, Position { x, y });
        }
    }
}
