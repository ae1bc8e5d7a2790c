//! A cooperative stop flag shared by the loops and whoever wants them to stop, optionally
//! also raised by SIGINT/SIGTERM (through `signal-hook`, whose handler only stores to the
//! flag: async-signal-safe).

use std::fmt;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::SigId;

/// A clonable stop flag: every clone sees a [`Shutdown::trigger`] of any other.
#[derive(Clone, Default)]
pub struct Shutdown {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    flag: Arc<AtomicBool>,
    /// The signal registrations raising `flag`, removed when the last clone goes.
    signals: Vec<SigId>,
}

impl Shutdown {
    /// A flag raised only by [`Shutdown::trigger`].
    pub fn new() -> Self {
        Self::default()
    }

    /// A flag also raised by SIGINT and SIGTERM. The signals no longer end the process
    /// while the flag (any clone) lives: the loops that check it stop cleanly instead.
    pub fn on_signals() -> io::Result<Self> {
        let flag = Arc::new(AtomicBool::new(false));
        let mut signals = Vec::with_capacity(2);
        for sig in [SIGINT, SIGTERM] {
            match signal_hook::flag::register(sig, Arc::clone(&flag)) {
                Ok(id) => signals.push(id),
                Err(e) => {
                    for id in signals {
                        signal_hook::low_level::unregister(id);
                    }
                    return Err(e);
                }
            }
        }
        Ok(Shutdown {
            inner: Arc::new(Inner { flag, signals }),
        })
    }

    pub fn trigger(&self) {
        self.inner.flag.store(true, Ordering::SeqCst);
    }

    #[inline]
    pub fn is_triggered(&self) -> bool {
        self.inner.flag.load(Ordering::Relaxed)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        for &id in &self.signals {
            signal_hook::low_level::unregister(id);
        }
    }
}

impl fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shutdown")
            .field("triggered", &self.is_triggered())
            .field("on_signals", &!self.inner.signals.is_empty())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_is_shared_by_clones() {
        let a = Shutdown::new();
        let b = a.clone();
        assert!(!b.is_triggered());
        a.trigger();
        assert!(b.is_triggered());
    }

    /// The only test of this crate that raises signals: the handlers must be in place while
    /// it does (a SIGTERM without them would end the test process).
    #[test]
    fn sigint_and_sigterm_raise_the_flag() {
        let plain = Shutdown::new();
        for sig in [SIGINT, SIGTERM] {
            let s = Shutdown::on_signals().expect("signal handlers");
            let clone = s.clone();
            assert!(!clone.is_triggered());
            signal_hook::low_level::raise(sig).expect("raise");
            assert!(clone.is_triggered(), "signal {sig} did not raise the flag");
        }
        assert!(!plain.is_triggered(), "a plain flag ignores signals");
    }
}
