//! The `?` overlay: every binding of the effective keymap, grouped by screen.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::block;
use crate::tui::app::App;
use crate::tui::theme::Slot;
use crate::tui::widgets::text;

/// The help as lines (section titles, then `keys  what they do`).
pub fn lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let theme = app.theme();
    let sections = app.help_sections();
    let keys_w = sections
        .iter()
        .flat_map(|s| s.entries.iter().map(|e| text::width(&e.keys)))
        .max()
        .unwrap_or(8)
        .clamp(6, (width / 3).max(6) as usize);
    let mut out = Vec::new();
    for (i, s) in sections.iter().enumerate() {
        if i > 0 {
            out.push(Line::raw(""));
        }
        out.push(Line::styled(s.title.to_string(), theme.style(Slot::Title)));
        for e in &s.entries {
            // A key the selected row's cluster cannot honour is greyed, with the reason.
            let full = match &e.unavailable {
                Some(why) => format!("{} ({why})", e.text),
                None => e.text.to_string(),
            };
            let help = text::truncate(&full, (width as usize).saturating_sub(keys_w + 3)).into_owned();
            let (key_style, text_style) = match e.unavailable {
                Some(_) => (theme.style(Slot::Dim), theme.style(Slot::Dim)),
                None => (theme.style(Slot::FooterKey), theme.style(Slot::Base)),
            };
            out.push(Line::from(vec![
                Span::styled(format!("  {}", text::fit(&e.keys, keys_w, false)), key_style),
                Span::styled(format!(" {help}"), text_style),
            ]));
        }
    }
    out
}

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let rect = area;
    frame.render_widget(Clear, rect);
    let b = block(app, format!(" Keys · keymap {} ", app.keymap().name()), true);
    let inner = b.inner(rect);
    frame.render_widget(b, rect);
    let all = lines(app, inner.width);
    let max = all.len().saturating_sub(inner.height as usize);
    let scroll = app.help.unwrap_or(0).min(max);
    let shown: Vec<Line> = all.into_iter().skip(scroll).take(inner.height as usize).collect();
    frame.render_widget(Paragraph::new(shown).style(app.theme().style(Slot::Base)), inner);
}
