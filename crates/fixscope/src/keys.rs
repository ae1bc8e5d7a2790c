//! Single-key commands while `fixscope live` runs in a terminal: SPACE cumulative
//! percentiles + histogram, `r` reset, `q`/ESC quit, `?` help.
//!
//! Only canonical mode and echo are switched off (not full raw mode), so output keeps its
//! normal newlines; the previous settings come back on drop.

use std::io::Read;

/// A key command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Summary,
    Reset,
    Quit,
    Help,
}

pub const HELP: &str =
    "keys: SPACE cumulative percentiles + histogram   r reset   q/ESC quit   ? help";

/// Reads keys without blocking when stdin is a terminal; does nothing otherwise.
pub struct KeyReader {
    saved: Option<libc::termios>,
}

impl KeyReader {
    pub fn new() -> Self {
        // SAFETY: isatty/tcgetattr/tcsetattr on fd 0 with a termios we own.
        unsafe {
            if libc::isatty(0) != 1 {
                return KeyReader { saved: None };
            }
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut t) != 0 {
                return KeyReader { saved: None };
            }
            let saved = t;
            t.c_lflag &= !(libc::ICANON | libc::ECHO);
            t.c_cc[libc::VMIN] = 0;
            t.c_cc[libc::VTIME] = 0;
            if libc::tcsetattr(0, libc::TCSANOW, &t) != 0 {
                return KeyReader { saved: None };
            }
            KeyReader { saved: Some(saved) }
        }
    }

    pub fn interactive(&self) -> bool {
        self.saved.is_some()
    }

    /// The next key command typed, if any (VMIN=0 makes the read return at once).
    pub fn poll(&mut self) -> Option<Key> {
        self.saved?;
        let mut buf = [0u8; 16];
        let n = std::io::stdin().read(&mut buf).ok()?;
        buf[..n].iter().find_map(|&b| match b {
            b' ' => Some(Key::Summary),
            b'r' | b'R' => Some(Key::Reset),
            b'q' | b'Q' | 0x1b => Some(Key::Quit),
            b'?' | b'h' => Some(Key::Help),
            _ => None,
        })
    }
}

impl Drop for KeyReader {
    fn drop(&mut self) {
        if let Some(saved) = self.saved {
            // SAFETY: restores the settings read in `new` on the same fd.
            unsafe {
                libc::tcsetattr(0, libc::TCSANOW, &saved);
            }
        }
    }
}
