//! Owning the terminal: raw mode and the alternate screen while the UI runs, and the
//! terminal given back as it was on every way out — a normal end, a signal (the driver's
//! loop sees the stop flag and drops the UI), an error (drop), and a panic (a hook that
//! restores before the panic message is printed, so it is readable).
//!
//! Raw mode here, unlike the line mode of `keys.rs`: the UI places every character itself
//! (no `\n` to process), and Ctrl-C arrives as a key the UI turns into quit. SIGINT and
//! SIGTERM sent with `kill` still raise the stop flag.

use std::io::{self, IsTerminal, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::cursor::{Hide, Show};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::Terminal;

/// Whether the screen is ours: the panic hook restores only then.
static ON_SCREEN: AtomicBool = AtomicBool::new(false);
static PANIC_HOOK: Once = Once::new();

/// The full-screen terminal; restored when dropped.
pub struct Screen {
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
}

/// Why the UI cannot start, checked before anything is attached.
pub fn check_terminal() -> Result<(), &'static str> {
    if !io::stdout().is_terminal() {
        return Err(
            "--tui needs a terminal on stdout (without --tui the report is \
                    printed as lines; --json-file keeps a record)",
        );
    }
    Ok(())
}

impl Screen {
    pub fn enter() -> io::Result<Screen> {
        PANIC_HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore();
                previous(info);
            }));
        });
        enable_raw_mode()?;
        ON_SCREEN.store(true, Ordering::SeqCst);
        let started = execute!(io::stdout(), EnterAlternateScreen, Hide)
            .and_then(|()| Terminal::new(CrosstermBackend::new(io::stdout())));
        match started {
            Ok(terminal) => Ok(Screen { terminal }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

/// Gives the terminal back (once: later calls do nothing).
pub fn restore() {
    if ON_SCREEN.swap(false, Ordering::SeqCst) {
        // Raw mode first: the rest is only output. Errors cannot be reported anywhere
        // better than the terminal being restored as far as it can be.
        let _ = disable_raw_mode();
        let _ = execute!(io::stdout(), LeaveAlternateScreen, Show);
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}
