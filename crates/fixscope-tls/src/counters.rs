//! What the TLS layer counted. Defined here once; `fixscope-core`'s `counters/` composes it
//! into every output (text, JSON, Prometheus) by these serde names.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TlsCounters {
    /// TCP connections that carried TLS (a ClientHello, or TLS records from the start).
    pub tls_connections: u64,
    /// TLS records whose tag verified (handshake records under encryption included).
    pub tls_records_decrypted: u64,
    /// TLS connections whose client random has no line in the key log: their orders are
    /// not measured (the summary names each).
    pub tls_no_key: u64,
    /// TLS connections whose handshake the capture did not hold (it started mid-session,
    /// or a hole took the hellos): no key can be chosen, nothing is decrypted.
    pub tls_no_handshake: u64,
    /// TLS connections whose cipher suite is not decrypted (CBC suites, TLS 1.0/1.1,
    /// anything but the AEAD suites docs/tls.md lists) or that sent 0-RTT early data.
    pub tls_unsupported: u64,
    /// Records whose AEAD tag did not verify (a corrupted record, a wrong key): dropped,
    /// and the FIX framing resynchronises after them.
    pub tls_auth_failed: u64,
    /// Times a direction found its record boundary and sequence number again after a
    /// capture hole.
    pub tls_resyncs: u64,
    /// `live --tls-uprobes`: OpenSSL calls of watched connections whose plaintext could not
    /// be tied to the TLS records carrying it (docs/tls.md says when): their bytes are a
    /// gap for the FIX framer, their messages are not timed.
    pub tls_uprobe_unmapped: u64,
    /// `live --tls-uprobes`: TLS connections whose records came but none of whose
    /// application's OpenSSL calls did (it does not use the hooked libssl: `--tls-lib`);
    /// their orders are not measured (the summary names each).
    pub tls_uprobe_silent: u64,
    /// `--tls-uprobes` with `--tls-keylog`: records' worth of plaintext the calls placed on
    /// a decrypted connection that equal the decryption's bytes at the same time.
    pub tls_uprobe_verified: u64,
    /// ... and those that did not (should stay 0: the two paths disagree).
    pub tls_uprobe_disagreed: u64,
    /// `--tls-uprobes` with `--tls-keylog`: decrypted connections none of whose calls was
    /// compared with the decryption (no call came, or none could be placed): the check
    /// the two flags ask for checked nothing there.
    pub tls_uprobe_unchecked: u64,
    /// `live --tls-uprobes`: calls whose plaintext was placed on the records that carried
    /// it. Every call user space gets lands in exactly one of `tls_uprobe_placed`,
    /// `tls_uprobe_unmapped` and `tls_uprobe_ignored`.
    pub tls_uprobe_placed: u64,
    /// `live --tls-uprobes`: calls of connections that carry no TLS to place them on (plain
    /// FIX, a connection already given up: no key, silent), or the other end's calls on
    /// the same host (the kernel's role filter leaves most of them out).
    pub tls_uprobe_ignored: u64,
}

impl TlsCounters {
    /// Every field, for the arithmetic below (a test checks it names them all).
    fn fields_mut(&mut self) -> [&mut u64; 14] {
        [
            &mut self.tls_connections,
            &mut self.tls_records_decrypted,
            &mut self.tls_no_key,
            &mut self.tls_no_handshake,
            &mut self.tls_unsupported,
            &mut self.tls_auth_failed,
            &mut self.tls_resyncs,
            &mut self.tls_uprobe_unmapped,
            &mut self.tls_uprobe_silent,
            &mut self.tls_uprobe_verified,
            &mut self.tls_uprobe_disagreed,
            &mut self.tls_uprobe_unchecked,
            &mut self.tls_uprobe_placed,
            &mut self.tls_uprobe_ignored,
        ]
    }

    /// Adds `other`'s counts (sharded pipelines: the parts add up to the whole).
    pub fn merge_from(&mut self, other: &Self) {
        let mut theirs = *other;
        for (mine, theirs) in self.fields_mut().into_iter().zip(theirs.fields_mut()) {
            *mine += *theirs;
        }
    }

    /// What each count added since `earlier` (an interval's own counts).
    pub fn minus(&self, earlier: &Self) -> Self {
        let mut d = *self;
        let mut then = *earlier;
        for (now, then) in d.fields_mut().into_iter().zip(then.fields_mut()) {
            *now = now.saturating_sub(*then);
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_names_every_field() {
        // Set every field to a distinct value through serde, so a field added to the
        // struct but not to `fields_mut` is caught.
        let names = serde_json::to_value(TlsCounters::default()).unwrap();
        let names = names.as_object().unwrap();
        let set = |base: u64| -> TlsCounters {
            let m: serde_json::Map<_, _> = names
                .keys()
                .enumerate()
                .map(|(i, k)| (k.clone(), serde_json::Value::from(base + i as u64 + 1)))
                .collect();
            serde_json::from_value(m.into()).unwrap()
        };
        let (a, b) = (set(0), set(100));
        let mut sum = a;
        sum.merge_from(&b);
        let sum = serde_json::to_value(sum).unwrap();
        let diff = serde_json::to_value(b.minus(&a)).unwrap();
        for (i, k) in names.keys().enumerate() {
            assert_eq!(sum[k], 2 * (i as u64 + 1) + 100, "merge_from misses {k}");
            assert_eq!(diff[k], 100, "minus misses {k}");
        }
    }
}
