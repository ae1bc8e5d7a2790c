//! Cooperative shutdown flag, optionally also raised by SIGINT/SIGTERM.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Set by the signal handler; async-signal-safe because it is a plain atomic store.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    SIGNALLED.store(true, Ordering::SeqCst);
}

/// A clonable stop flag shared between the loops and whoever wants them to stop.
#[derive(Clone, Debug, Default)]
pub struct Shutdown {
    flag: Arc<AtomicBool>,
    watch_signals: bool,
}

impl Shutdown {
    pub fn new() -> Self {
        Self::default()
    }

    /// A flag that is also raised by SIGINT and SIGTERM (installs process-wide handlers).
    pub fn on_signals() -> anyhow::Result<Self> {
        for sig in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: `sigaction` is zero-initialisable plain data; we set the handler to a
            // function that only performs an atomic store (async-signal-safe) and pass valid
            // pointers to the syscall wrapper.
            let rc = unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
                libc::sigemptyset(&mut sa.sa_mask);
                sa.sa_flags = 0;
                libc::sigaction(sig, &sa, std::ptr::null_mut())
            };
            if rc != 0 {
                return Err(std::io::Error::last_os_error().into());
            }
        }
        Ok(Shutdown {
            flag: Arc::new(AtomicBool::new(false)),
            watch_signals: true,
        })
    }

    pub fn trigger(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    pub fn is_triggered(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
            || (self.watch_signals && SIGNALLED.load(Ordering::Relaxed))
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
}
