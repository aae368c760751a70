//! The bottom line: the few keys that matter on this screen, from the keymap; or the prompt
//! being typed (the `/` filter, the `:` command line with its completions).

use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::text::Span;

use super::put_spans;
use crate::tui::action::{Mode, UiAction};
use crate::tui::app::{App, Input, Screen};
use crate::tui::theme::Slot;
use crate::tui::widgets::text;

/// A short label for footer hints.
pub fn label(action: UiAction) -> &'static str {
    match action {
        UiAction::Quit => "quit",
        UiAction::Help => "help",
        UiAction::CommandMode => "command",
        UiAction::Filter => "filter",
        UiAction::Back => "back",
        UiAction::Refresh => "refresh",
        UiAction::ScreenOverview => "overview",
        UiAction::ScreenJobs => "jobs",
        UiAction::ScreenNodes => "nodes",
        UiAction::ScreenGpus => "gpus",
        UiAction::ScreenUsage => "usage",
        UiAction::ScreenHistory => "history",
        UiAction::ReloadHistory => "reload",
        UiAction::NextScreen => "next",
        UiAction::PrevScreen => "prev",
        UiAction::CycleTheme => "theme",
        UiAction::Open => "open",
        UiAction::ToggleSelect => "mark",
        UiAction::SelectAll => "mark all",
        UiAction::ClearSelection => "unmark",
        UiAction::ToggleFold => "fold",
        UiAction::SortNext => "sort",
        UiAction::SortReverse => "reverse",
        UiAction::FilterMine => "mine",
        UiAction::FilterState => "state",
        UiAction::FilterCluster => "cluster",
        UiAction::HideFinished => "finished",
        UiAction::ProblemNodes => "problems",
        UiAction::Cancel => "cancel",
        UiAction::Hold => "hold",
        UiAction::Release => "release",
        UiAction::Requeue => "requeue",
        UiAction::Drain => "drain",
        UiAction::Resume => "resume",
        UiAction::Cordon => "cordon",
        UiAction::Uncordon => "uncordon",
        UiAction::Delete => "delete",
        UiAction::Teardown => "tear down",
        UiAction::Migrate => "migrate",
        UiAction::Watch => "watch",
        UiAction::NextTarget | UiAction::PrevTarget => "target",
        UiAction::ToggleRunning => "running too",
        UiAction::CycleGpuType => "GPU model",
        UiAction::NewJob => "new job",
        UiAction::Follow => "follow",
        UiAction::SwitchLog => "stdout/stderr",
        UiAction::NextPod => "next pod",
        UiAction::NextField => "next field",
        UiAction::PrevField => "prev field",
        UiAction::SubmitForm => "submit",
        UiAction::LoadSpec => "load spec",
        UiAction::Confirm => "confirm",
        UiAction::Dismiss => "dismiss",
        UiAction::Up | UiAction::Down | UiAction::Left | UiAction::Right => "move",
        UiAction::PageUp | UiAction::PageDown => "page",
        UiAction::Top => "top",
        UiAction::Bottom => "bottom",
    }
}

/// The actions worth a hint on each screen, most important first.
fn hints_for(app: &App) -> (Mode, &'static [UiAction]) {
    use UiAction::*;
    if app.dialog().is_some_and(|d| d.is_migration()) {
        return (Mode::Dialog, &[Confirm, Dismiss, NextTarget, ToggleRunning, CycleGpuType]);
    }
    if app.dialog().is_some() {
        return (Mode::Dialog, &[Confirm, Dismiss]);
    }
    if app.help_open() {
        return (app.screen().mode(), &[Back, Help, Down, Quit]);
    }
    let list: &'static [UiAction] = match app.screen() {
        Screen::Overview => &[ScreenJobs, ScreenNodes, ScreenGpus, FilterCluster, NewJob, CommandMode, Help, Quit],
        Screen::Jobs => &[
            Filter,
            Open,
            ToggleSelect,
            Cancel,
            Hold,
            Release,
            Requeue,
            Migrate,
            SortNext,
            FilterMine,
            FilterState,
            HideFinished,
            FilterCluster,
            ScreenHistory,
            Help,
            Quit,
        ],
        Screen::Nodes => &[
            Filter,
            ProblemNodes,
            Drain,
            Resume,
            Cordon,
            Uncordon,
            ToggleSelect,
            SortNext,
            FilterCluster,
            Open,
            Help,
            Quit,
        ],
        Screen::Gpus => &[Open, ProblemNodes, SortNext, FilterCluster, Help, Quit],
        Screen::Usage => &[Filter, Open, SortNext, SortReverse, ReloadHistory, Help, Quit],
        Screen::History => &[Open, ReloadHistory, FilterCluster, Top, Bottom, Back, Help, Quit],
        Screen::Detail => &[Follow, SwitchLog, NextPod, Cancel, Hold, Release, Back, Help],
        Screen::Submit => &[NextField, SubmitForm, LoadSpec, Back],
    };
    (app.screen().mode(), list)
}

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let theme = app.theme();
    frame.buffer_mut().set_style(area, theme.style(Slot::Footer));
    if let Some(input) = app.input() {
        let (prefix, field, extra) = match input {
            Input::Filter { text, .. } => ("/", text, "   enter keep · esc clear".to_string()),
            Input::Command { text, candidates } => {
                let extra = if candidates.len() > 1 { format!("   {}", candidates.join("  ")) } else { String::new() };
                (":", text, extra)
            }
        };
        let spans = [
            Span::styled(prefix, theme.style(Slot::FooterKey)),
            Span::styled(field.text().to_string(), theme.style(Slot::Footer)),
            Span::styled(extra, theme.style(Slot::Dim)),
        ];
        put_spans(frame.buffer_mut(), area, &spans);
        let before: String = field.text().chars().take(field.cursor()).collect();
        let x = area.x + 1 + text::width(&before) as u16;
        if x < area.x + area.width {
            super::text_cursor(frame, Position { x, y: area.y });
        }
        return;
    }
    let (mode, actions) = hints_for(app);
    let mut spans: Vec<Span> = Vec::new();
    let mut used = 0usize;
    let mut seen_labels: Vec<&str> = Vec::new();
    for action in actions {
        let key = if mode == Mode::Dialog {
            super::dialog::dialog_key(app, *action)
        } else {
            app.keymap().hint(mode, *action)
        };
        let Some(key) = key else { continue };
        // Keys the selected row's cluster cannot honour are not offered.
        if app.unavailable(*action).is_some() {
            continue;
        }
        let l = label(*action);
        if seen_labels.contains(&l) {
            continue;
        }
        let w = text::width(&key) + 1 + l.len() + 2;
        if used + w > area.width as usize {
            break;
        }
        seen_labels.push(l);
        used += w;
        spans.push(Span::styled(format!(" {key}"), theme.style(Slot::FooterKey)));
        spans.push(Span::styled(format!(" {l} "), theme.style(Slot::Footer)));
    }
    if !app.pending.is_empty() {
        spans.push(Span::styled(" …", theme.style(Slot::Dim)));
    }
    put_spans(frame.buffer_mut(), area, &spans);
}
