//! A connection followed by its application's OpenSSL calls (`--tls-uprobes`,
//! [`crate::uprobe`]): without a key the calls give its plaintext; with one (and a key log
//! too) they are placed all the same and checked against the decryption.

use super::{Mode, Plain, Side, TlsConnection};
use crate::counters::TlsCounters;
use crate::handshake::ServerHello;
use crate::suite::{self, Version};
use crate::uprobe::{CallJoin, CallKind, TlsCall};

impl TlsConnection {
    /// `--tls-uprobes`: one OpenSSL call's plaintext of `side`'s direction, placed on the
    /// records that carried it (a connection that is plain FIX ignores it).
    pub fn call<F>(
        &mut self,
        side: Side,
        call: &TlsCall<'_>,
        counters: &mut TlsCounters,
        out: &mut F,
    ) where
        F: FnMut(Side, Plain<'_>),
    {
        if call.kind == CallKind::MemoryBio {
            // Not a call: why its calls will not come, should it turn out silent.
            self.memory_bio = true;
            return;
        }
        if self.calls.is_none() {
            counters.tls_uprobe_ignored += 1;
            return;
        }
        match self.mode {
            Mode::Uprobe | Mode::AwaitingKey => {}
            Mode::Tls if self.checks.is_some() => {}
            // The hellos are not through yet on the wire: the call cannot be placed.
            Mode::Tls => {
                counters.tls_uprobe_unmapped += 1;
                return out(side, Plain::Gap);
            }
            Mode::Detecting | Mode::Plain | Mode::Dead(_) => {
                counters.tls_uprobe_ignored += 1;
                return;
            }
        }
        self.with_join(side, counters, out, |join, counters, mut out| {
            join.call(call, counters, &mut out)
        });
    }

    /// Bytes of `side` to its records' framer (`--tls-uprobes`). A direction none of whose
    /// calls come is told only at the connection's end ([`CallJoin::is_silent`]): while it
    /// runs, an application may simply not have read yet.
    pub(super) fn wire<F>(
        &mut self,
        side: Side,
        bytes: &[u8],
        seq: u32,
        ts_ns: u64,
        counters: &mut TlsCounters,
        out: &mut F,
    ) where
        F: FnMut(Side, Plain<'_>),
    {
        self.with_join(side, counters, out, |join, counters, mut out| {
            join.wire(seq, bytes, ts_ns, counters, &mut out)
        });
    }

    /// Runs `f` on `side`'s join, its placements going to `out` — or, when the connection
    /// is decrypted, to the check against the decryption.
    fn with_join<F>(
        &mut self,
        side: Side,
        counters: &mut TlsCounters,
        out: &mut F,
        f: impl FnOnce(&mut CallJoin, &mut TlsCounters, &mut dyn FnMut(Plain<'_>)),
    ) where
        F: FnMut(Side, Plain<'_>),
    {
        let Some(calls) = self.calls.as_mut() else {
            return;
        };
        let join = &mut calls[side as usize];
        match self.checks.as_mut() {
            Some(checks) => {
                let check = &mut checks[side as usize];
                let mut checked = TlsCounters::default();
                f(join, counters, &mut |p| check.placed(p, &mut checked));
                counters.merge_from(&checked);
            }
            None => f(join, counters, &mut |p| out(side, p)),
        }
    }

    /// No key: if calls are followed, the connection goes by them from here (records are
    /// framed only); false if not.
    pub(super) fn go_by_calls(&mut self, hello: &ServerHello, version: Version) -> bool {
        let Some(calls) = self.calls.as_mut() else {
            return false;
        };
        let Some(suite) = suite::find(hello.cipher_suite, version) else {
            return false;
        };
        for join in calls.iter_mut() {
            join.set_suite(&suite);
        }
        self.version = Some(version);
        self.suite = Some(suite);
        self.mode = Mode::Uprobe;
        self.client = Default::default();
        self.server = Default::default();
        true
    }

    /// Keyed: calls followed are placed too and checked against the decryption.
    pub(super) fn check_calls(&mut self) {
        let (Some(calls), Some(suite)) = (self.calls.as_mut(), self.suite) else {
            return;
        };
        for join in calls.iter_mut() {
            join.set_suite(&suite);
        }
        self.checks = Some(Box::default());
    }

    /// Held for a key: calls are held, not placed, until it is known how.
    pub(super) fn pause_calls(&mut self) {
        if let Some(calls) = self.calls.as_mut() {
            calls.iter_mut().for_each(|j| j.pause());
        }
    }

    /// The calls held while the key was awaited are placed now (to `out`, or to the check).
    pub(super) fn resume_calls<F>(&mut self, counters: &mut TlsCounters, out: &mut F)
    where
        F: FnMut(Side, Plain<'_>),
    {
        for side in [Side::Client, Side::Server] {
            self.with_join(side, counters, out, |join, counters, mut out| {
                join.resume(counters, &mut out)
            });
        }
    }
}
