//! Thin safe wrappers over the Linux syscalls the loops use: epoll and timerfd.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

fn cvt(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// Events one `wait` can return.
pub const MAX_EVENTS: usize = 256;

/// A level-triggered epoll instance; each registered fd carries a `u64` token.
pub struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
    ready: usize,
}

impl Epoll {
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall; on success it returns a fresh fd we take ownership of.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        Ok(Epoll {
            // SAFETY: `fd` was just returned by epoll_create1 and is owned by nobody else.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            events: vec![libc::epoll_event { events: 0, u64: 0 }; MAX_EVENTS],
            ready: 0,
        })
    }

    fn ctl(
        &self,
        op: libc::c_int,
        fd: RawFd,
        readable: bool,
        writable: bool,
        token: u64,
    ) -> io::Result<()> {
        let mut flags = 0u32;
        if readable {
            flags |= libc::EPOLLIN as u32 | libc::EPOLLRDHUP as u32;
        }
        if writable {
            flags |= libc::EPOLLOUT as u32;
        }
        let mut ev = libc::epoll_event {
            events: flags,
            u64: token,
        };
        // SAFETY: `ev` is a valid epoll_event for the duration of the call; `fd` is an open
        // descriptor owned by the caller.
        cvt(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut ev) }).map(|_| ())
    }

    pub fn add(&self, fd: RawFd, token: u64, writable: bool) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, true, writable, token)
    }

    pub fn modify(&self, fd: RawFd, token: u64, writable: bool) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, true, writable, token)
    }

    /// Asks for writability events on `fd` (after a blocked flush) or stops asking (once
    /// flushed), only when that changes what `armed` says is asked now.
    pub fn want_writable(
        &self,
        fd: RawFd,
        token: u64,
        armed: &mut bool,
        want: bool,
    ) -> io::Result<()> {
        if *armed == want {
            return Ok(());
        }
        *armed = want;
        self.modify(fd, token, want)
    }

    pub fn delete(&self, fd: RawFd) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd, false, false, 0)
    }

    /// Waits up to `timeout_ms` (0 = poll, -1 = forever); EINTR counts as "no events".
    pub fn wait(&mut self, timeout_ms: i32) -> io::Result<usize> {
        // SAFETY: `events` has MAX_EVENTS initialised entries the kernel may overwrite.
        let rc = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                MAX_EVENTS as libc::c_int,
                timeout_ms,
            )
        };
        self.ready = match cvt(rc) {
            Ok(n) => n as usize,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
            Err(e) => return Err(e),
        };
        Ok(self.ready)
    }

    /// `(token, events)` of the i-th ready fd from the last `wait`.
    pub fn event(&self, i: usize) -> (u64, u32) {
        let ev = self.events[i];
        (ev.u64, ev.events)
    }
}

pub fn is_error_or_hup(events: u32) -> bool {
    events & (libc::EPOLLERR as u32 | libc::EPOLLHUP as u32) != 0
}

pub fn is_readable(events: u32) -> bool {
    events & (libc::EPOLLIN as u32 | libc::EPOLLRDHUP as u32) != 0
}

pub fn is_writable(events: u32) -> bool {
    events & libc::EPOLLOUT as u32 != 0
}

/// A CLOCK_MONOTONIC timerfd, armed at absolute times with nanosecond resolution (epoll's
/// own timeout only has millisecond resolution).
pub struct TimerFd {
    fd: OwnedFd,
    armed_at: u64,
}

impl TimerFd {
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall; on success it returns a fresh fd we take ownership of.
        let fd = cvt(unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        })?;
        Ok(TimerFd {
            // SAFETY: `fd` was just returned by timerfd_create and is owned by nobody else.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            armed_at: 0,
        })
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Fires once at CLOCK_MONOTONIC `at_ns` (re-arming at the same time is a no-op).
    pub fn arm_at(&mut self, at_ns: u64) -> io::Result<()> {
        if at_ns == self.armed_at {
            return Ok(());
        }
        let at_ns = at_ns.max(1);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (at_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (at_ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: `spec` is a valid itimerspec; a null old-value pointer is allowed.
        cvt(unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        })?;
        self.armed_at = at_ns;
        Ok(())
    }

    /// Consumes an expiry so the level-triggered epoll stops reporting it.
    pub fn clear(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a valid 8-byte buffer; a nonblocking timerfd
        // returns EAGAIN when nothing expired, which we ignore.
        unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        self.armed_at = 0;
    }
}

/// Asks the kernel for tight timer wakeups on this thread (the default 50us timer slack
/// would add up to 50us to every sleep).
pub fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer argument and affects only this thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Milliseconds to sleep in epoll so we wake at most `cap_ms` later, rounding up.
pub fn ms_until(now_ns: u64, due_ns: u64, cap_ms: i32) -> i32 {
    if due_ns <= now_ns {
        return 0;
    }
    (due_ns - now_ns).div_ceil(1_000_000).min(cap_ms as u64) as i32
}
