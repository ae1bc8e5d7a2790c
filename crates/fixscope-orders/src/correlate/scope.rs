//! The correlator's scope: a session and its epoch in one number. A session's epochs are
//! its runs of MsgSeqNums (a Logon with 141=Y or 34=1, a SequenceReset-Reset starts the
//! next); a request belongs to the epoch it was sent in, and a ClOrdID reused in a later
//! epoch is a new order ([`crate::correlate::Correlator`] supersedes the older one).

/// The correlator scope of (session, epoch): the epoch above these bits.
const EPOCH_SHIFT: u32 = 40;

/// The correlator's scope for a session in an epoch.
pub fn scope_of(session: u64, epoch: u64) -> u64 {
    session | epoch << EPOCH_SHIFT
}

/// The session of a correlator scope.
pub fn session_of(scope: u64) -> u64 {
    scope & ((1 << EPOCH_SHIFT) - 1)
}

/// The epoch of a correlator scope.
pub fn epoch_of(scope: u64) -> u64 {
    scope >> EPOCH_SHIFT
}
