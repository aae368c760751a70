//! The terminal: raw mode and the alternate screen while the cockpit runs, put back however
//! it ends — on drop, on error, and on panic (the hook restores first, then runs the
//! previous hook, color-eyre's, so its report lands on a normal screen).
//!
//! Ctrl-Z: [`TerminalGuard::suspend`] restores the terminal, stops the process group the way
//! the terminal driver would (`SIGTSTP`), and when the shell continues it (`fg`, `SIGCONT`)
//! takes the terminal back and redraws everything.

use std::io::{self, Stdout, Write};
use std::mem::ManuallyDrop;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{DisableBracketedPaste, EnableBracketedPaste};
use ratatui::crossterm::terminal::{
    BeginSynchronizedUpdate, Clear, ClearType, EndSynchronizedUpdate, EnterAlternateScreen, LeaveAlternateScreen,
    disable_raw_mode, enable_raw_mode,
};
use ratatui::crossterm::{cursor, execute, queue};

use super::App;
use super::event_loop::Surface;
use super::views;

/// Whether the terminal is in the cockpit's state (raw, alternate screen) right now.
static ACTIVE: AtomicBool = AtomicBool::new(false);
static PANIC_HOOK: Once = Once::new();

/// Put the terminal back as the shell had it: leave the alternate screen, show the cursor,
/// raw mode off. Does nothing when the cockpit does not hold the terminal; safe to call from
/// any thread, any number of times.
pub fn restore_terminal() -> io::Result<()> {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return Ok(());
    }
    let mut out = io::stdout();
    let screen = execute!(out, EndSynchronizedUpdate, DisableBracketedPaste, LeaveAlternateScreen, cursor::Show);
    let raw = disable_raw_mode();
    screen.and(raw)
}

/// Take the terminal: raw mode, alternate screen, bracketed paste, cursor hidden.
fn take_terminal() -> io::Result<()> {
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = io::stdout();
    if let Err(e) = execute!(out, EnterAlternateScreen, EnableBracketedPaste, cursor::Hide) {
        let _ = restore_terminal();
        return Err(e);
    }
    Ok(())
}

/// The thread the cockpit draws from: its panic ends the cockpit, others' do not.
static UI_THREAD: std::sync::OnceLock<std::thread::ThreadId> = std::sync::OnceLock::new();

fn install_panic_hook() {
    let _ = UI_THREAD.set(std::thread::current().id());
    PANIC_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let on_ui = UI_THREAD.get().is_none_or(|id| *id == std::thread::current().id());
            if on_ui || !ACTIVE.load(Ordering::SeqCst) {
                let _ = restore_terminal();
                previous(info);
            } else {
                // A background task (tokio catches its panic, the cockpit goes on): restoring
                // the terminal or printing here would wreck a screen that is still in use.
                tracing::error!(panic = %info, "a background task panicked");
            }
        }));
    });
}

/// Turns the App into bytes for a terminal: one frame at a time, inside a synchronized
/// update so the terminal shows it whole, writing only the cells that changed, and nothing
/// at all for a frame identical to the one on screen. Generic over the writer so the
/// benchmarks can count what a frame costs.
pub struct Painter<W: Write> {
    terminal: Terminal<CrosstermBackend<W>>,
    /// The frame on screen, to skip sending one that did not change.
    shown: Buffer,
}

impl<W: Write> Painter<W> {
    /// A painter for the whole terminal behind `writer` (its size asked on every frame).
    pub fn new(writer: W) -> io::Result<Self> {
        Ok(Painter { terminal: Terminal::new(CrosstermBackend::new(writer))?, shown: Buffer::default() })
    }

    /// A painter for a fixed `width`×`height` screen: no size queries, for benchmarks.
    pub fn fixed(writer: W, width: u16, height: u16) -> io::Result<Self> {
        let viewport = ratatui::Viewport::Fixed(ratatui::layout::Rect::new(0, 0, width, height));
        let terminal = Terminal::with_options(CrosstermBackend::new(writer), ratatui::TerminalOptions { viewport })?;
        Ok(Painter { terminal, shown: Buffer::default() })
    }

    pub fn paint(&mut self, app: &App) -> io::Result<()> {
        self.terminal.autoresize()?;
        let mut frame = self.terminal.get_frame();
        views::render(app, &mut frame);
        if *self.terminal.current_buffer_mut() == self.shown {
            self.terminal.current_buffer_mut().reset();
            return Ok(());
        }
        self.shown = self.terminal.current_buffer_mut().clone();
        queue!(self.terminal.backend_mut(), BeginSynchronizedUpdate)?;
        // Only the changed cells. The cockpit draws its own text cursor; the terminal's was
        // hidden when the terminal was taken and stays so, so no frame repeats the hiding
        // (`apply_buffer` would, six bytes a frame over a thin link).
        let drawn = self.terminal.flush();
        self.terminal.swap_buffers();
        let end = execute!(self.terminal.backend_mut(), EndSynchronizedUpdate);
        drawn.and(end)
    }

    /// Forget what is on screen so the next frame is sent whole.
    fn forget_screen(&mut self) {
        // The buffer ratatui diffs against is reset by the second swap (both are blank then).
        // (`Terminal::clear` would do it too, but asks the terminal for the cursor position
        // and waits for the answer.)
        self.terminal.swap_buffers();
        self.terminal.swap_buffers();
        self.shown = Buffer::default();
    }
}

/// Owns the terminal while the cockpit runs; restores it when dropped.
pub struct TerminalGuard {
    /// Not dropped when the terminal is gone: see `Drop`.
    painter: ManuallyDrop<Painter<Stdout>>,
}

impl TerminalGuard {
    /// Install the panic hook (once per process) and take the terminal.
    pub fn enter() -> io::Result<TerminalGuard> {
        install_panic_hook();
        take_terminal()?;
        match Painter::new(io::stdout()) {
            Ok(painter) => Ok(TerminalGuard { painter: ManuallyDrop::new(painter) }),
            Err(e) => {
                let _ = restore_terminal();
                Err(e)
            }
        }
    }

    /// Give the terminal back now (also done on drop).
    pub fn restore(&mut self) -> io::Result<()> {
        restore_terminal()
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let _ = restore_terminal();
        // ratatui's own drop shows the cursor and, when that fails, prints to stderr — which
        // panics on a hung-up terminal. Drop it only while the terminal still answers; else
        // leave it (the process is ending anyway).
        if self.painter.terminal.show_cursor().is_ok() {
            // SAFETY: dropped exactly once, here; `self.painter` is not used afterwards.
            unsafe { ManuallyDrop::drop(&mut self.painter) };
        }
    }
}

impl Surface for TerminalGuard {
    fn draw(&mut self, app: &App) -> io::Result<()> {
        self.painter.paint(app)
    }

    fn suspend(&mut self) -> io::Result<()> {
        restore_terminal()?;
        io::stdout().flush()?;
        // Returns once the shell continues us.
        let stopped = stop_process_group();
        self.resume()?;
        stopped
    }

    fn resume(&mut self) -> io::Result<()> {
        // The shell may have reset the terminal modes while we were stopped: take them again
        // even if we think we hold them, and redraw every cell.
        // crossterm's enable_raw_mode does nothing while it thinks raw mode is on, so turn
        // it off first: the shell may have reset the modes behind its back.
        ACTIVE.store(false, Ordering::SeqCst);
        let _ = disable_raw_mode();
        take_terminal()?;
        execute!(io::stdout(), Clear(ClearType::All))?;
        self.painter.forget_screen();
        Ok(())
    }

    fn size(&self) -> io::Result<(u16, u16)> {
        ratatui::crossterm::terminal::size()
    }

    fn notify(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut out = io::stdout();
        out.write_all(bytes)?;
        out.flush()
    }

    /// The terminal is still there. A hung-up terminal makes `TIOCGWINSZ` fail; asked every
    /// tick, this ends the cockpit instead of leaving it (and crossterm's reader, which
    /// retries a dead descriptor forever) running with no one watching.
    fn alive(&mut self) -> bool {
        ratatui::crossterm::terminal::window_size().is_ok()
    }
}

/// Stop our process group with `SIGTSTP`, as the terminal driver does for Ctrl-Z in a
/// normal (cooked) terminal; returns when continued.
fn stop_process_group() -> io::Result<()> {
    // SAFETY: kill(2) with pid 0 (our process group) and a valid signal number has no memory
    // effects; SIGTSTP's default action stops the process until SIGCONT.
    if unsafe { libc::kill(0, libc::SIGTSTP) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
