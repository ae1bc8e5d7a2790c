//! Every message fixscope gives the user on stderr goes through here, so all of them look
//! alike (`fixscope: ...`) and stay off stdout, which carries the report (text or JSON).

use std::fmt::Display;

/// Progress and facts: what is attached, what was read.
pub fn info(message: impl Display) {
    eprintln!("fixscope: {message}");
}

/// Something the user should know about the figures (drops, truncated input).
pub fn warn(message: impl Display) {
    eprintln!("fixscope: warning: {message}");
}

/// A failure; the run ends (non-zero exit).
pub fn error(message: impl Display) {
    eprintln!("fixscope: error: {message}");
}
