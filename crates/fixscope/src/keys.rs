//! Single-key commands while `fixscope live` runs in a terminal: SPACE cumulative
//! percentiles + histogram, `r` reset, `q`/ESC quit, `?` help; with `--tui` also TAB and
//! shift-TAB (views), read by the UI itself (`tui`) through the same [`command`] map.
//!
//! Keys are read and decoded by crossterm (`event::poll` + `event::read`). The terminal
//! mode is set here, not by crossterm: `crossterm::terminal::enable_raw_mode` is
//! `cfmakeraw`, which also switches off output processing (OPOST), so every `\n` the
//! reports print would move down without returning to the first column, and it switches
//! off ISIG, so Ctrl-C would no longer stop the run. crossterm offers nothing between
//! cooked and raw, so we clear only ICANON (keys arrive without Enter) and ECHO (typed keys
//! do not litter the report) and restore the saved settings on drop.

use std::io::IsTerminal;
use std::time::Duration;

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// A key command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Summary,
    Reset,
    Quit,
    Help,
    /// The terminal UI's next / previous view (nothing in line mode).
    NextView,
    PreviousView,
}

pub const HELP: &str =
    "keys: SPACE cumulative percentiles + histogram   r reset   q/ESC quit   ? help";

/// Reads keys without blocking when stdin is a terminal; does nothing otherwise.
pub struct KeyReader {
    /// The terminal settings to restore; `None` when stdin is not a terminal we set up.
    saved: Option<libc::termios>,
}

impl KeyReader {
    pub fn new() -> Self {
        if !std::io::stdin().is_terminal() {
            return KeyReader { saved: None };
        }
        KeyReader { saved: keys_mode() }
    }

    /// A reader that reads nothing (sources without a terminal session, e.g. capture files).
    pub fn disabled() -> Self {
        KeyReader { saved: None }
    }

    pub fn interactive(&self) -> bool {
        self.saved.is_some()
    }

    /// The next key command typed, if any; never waits. Other keys are skipped.
    pub fn poll(&mut self) -> Option<Key> {
        self.saved?;
        // Bounded: each round consumes one pending event.
        while event::poll(Duration::ZERO).ok()? {
            if let Event::Key(k) = event::read().ok()? {
                if let Some(key) = command(&k) {
                    return Some(key);
                }
            }
        }
        None
    }
}

/// The command a key press stands for.
pub fn command(k: &KeyEvent) -> Option<Key> {
    if k.kind != KeyEventKind::Press {
        return None;
    }
    match k.code {
        // Only seen in raw mode (the terminal UI); in line mode Ctrl-C is SIGINT.
        KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => Some(Key::Quit),
        KeyCode::Tab => Some(Key::NextView),
        KeyCode::BackTab => Some(Key::PreviousView),
        KeyCode::Char(' ') => Some(Key::Summary),
        KeyCode::Char('r' | 'R') => Some(Key::Reset),
        KeyCode::Char('q' | 'Q') | KeyCode::Esc => Some(Key::Quit),
        KeyCode::Char('?' | 'h') => Some(Key::Help),
        _ => None,
    }
}

/// Clears ICANON and ECHO on stdin; returns the previous settings, or `None` (and changes
/// nothing) if they cannot be read or set.
fn keys_mode() -> Option<libc::termios> {
    // SAFETY: tcgetattr/tcsetattr on fd 0 (a terminal, checked by the caller) with a
    // termios we own; a zeroed termios is valid plain data for tcgetattr to fill in.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(0, &mut t) != 0 {
            return None;
        }
        let saved = t;
        t.c_lflag &= !(libc::ICANON | libc::ECHO);
        // read() returns once a byte is there, as in raw mode: crossterm reads only after
        // polling says the terminal is readable, and a partial escape sequence waits for
        // its next byte instead of spinning on empty reads.
        t.c_cc[libc::VMIN] = 1;
        t.c_cc[libc::VTIME] = 0;
        if libc::tcsetattr(0, libc::TCSANOW, &t) != 0 {
            return None;
        }
        Some(saved)
    }
}

impl Drop for KeyReader {
    fn drop(&mut self) {
        if let Some(saved) = self.saved {
            // SAFETY: restores the settings read in `keys_mode` on the same fd.
            unsafe {
                libc::tcsetattr(0, libc::TCSANOW, &saved);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_presses_map_to_commands() {
        let press = |code| KeyEvent::new(code, KeyModifiers::NONE);
        assert_eq!(command(&press(KeyCode::Char(' '))), Some(Key::Summary));
        assert_eq!(command(&press(KeyCode::Char('r'))), Some(Key::Reset));
        assert_eq!(command(&press(KeyCode::Char('Q'))), Some(Key::Quit));
        assert_eq!(command(&press(KeyCode::Esc)), Some(Key::Quit));
        assert_eq!(command(&press(KeyCode::Char('?'))), Some(Key::Help));
        assert_eq!(command(&press(KeyCode::Char('x'))), None);
        assert_eq!(command(&press(KeyCode::Enter)), None);
        assert_eq!(command(&press(KeyCode::Tab)), Some(Key::NextView));
        assert_eq!(command(&press(KeyCode::BackTab)), Some(Key::PreviousView));
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(command(&ctrl_c), Some(Key::Quit));
        assert_eq!(command(&press(KeyCode::Char('c'))), None);
        let mut release = press(KeyCode::Char('q'));
        release.kind = KeyEventKind::Release;
        assert_eq!(command(&release), None);
    }
}
