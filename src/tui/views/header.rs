//! The top line: the screens (with their keys), then what is true of the whole session:
//! clusters and how many are stale, READ-ONLY, the user and the configuration.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Span;

use super::put_spans;
use crate::model::Health;
use crate::tui::action::{Mode, UiAction};
use crate::tui::app::{App, Screen};
use crate::tui::theme::Slot;
use crate::tui::widgets::text;

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let theme = app.theme();
    let buf = frame.buffer_mut();
    buf.set_style(area, theme.style(Slot::Header));
    let header = theme.style(Slot::Header);
    let mut left: Vec<Span> = vec![Span::styled(" flightdeck ", theme.style(Slot::Title))];
    let current = match app.screen() {
        Screen::History | Screen::Detail | Screen::Submit => None,
        s => Some(s),
    };
    for (screen, action) in [
        (Screen::Overview, UiAction::ScreenOverview),
        (Screen::Jobs, UiAction::ScreenJobs),
        (Screen::Nodes, UiAction::ScreenNodes),
        (Screen::Gpus, UiAction::ScreenGpus),
        (Screen::Usage, UiAction::ScreenUsage),
    ] {
        let key = app.keymap().hint(Mode::Global, action).map(|k| format!("{k}:")).unwrap_or_default();
        if current == Some(screen) {
            left.push(Span::styled(format!("[{key}{}]", screen.title()), theme.style(Slot::Selection)));
        } else {
            left.push(Span::styled(format!(" {key}{} ", screen.title()), header));
        }
    }
    if let Some(s @ (Screen::History | Screen::Detail | Screen::Submit)) = Some(app.screen()) {
        left.push(Span::styled(format!("[{}]", s.title()), theme.style(Slot::Selection)));
    }

    let fleet = app.fleet();
    let stale = fleet.clusters.iter().filter(|c| matches!(c.health, Health::Stale { .. })).count();
    let connecting = fleet.clusters.iter().filter(|c| matches!(c.health, Health::Connecting)).count();
    let mut right: Vec<Span> = Vec::new();
    if app.read_only() {
        right.push(Span::styled(" READ-ONLY ", theme.style(Slot::Warning)));
    }
    let n = fleet.clusters.len();
    right.push(Span::styled(format!(" {n} cluster{} ", if n == 1 { "" } else { "s" }), header));
    if stale > 0 {
        right.push(Span::styled(format!(" {stale} stale "), theme.style(Slot::Error)));
    }
    if connecting > 0 {
        right.push(Span::styled(format!(" {connecting} connecting "), theme.style(Slot::Dim)));
    }
    right.push(Span::styled(format!(" {} ", app.user), header));
    right.push(Span::styled(format!(" {} ", text::clean(&app.config_label)), theme.style(Slot::Dim)));

    let width = |spans: &[Span]| spans.iter().map(|s| text::width(&s.content)).sum::<usize>();
    // Less important parts go first when the line is short: the user, then the counts.
    while width(&left) + width(&right) > area.width as usize && right.len() > 1 {
        right.pop();
    }
    put_spans(buf, area, &left);
    let rw = width(&right) as u16;
    let lw = width(&left) as u16;
    if lw + rw <= area.width {
        put_spans(buf, Rect { x: area.x + area.width - rw, width: rw, ..area }, &right);
    }
}
