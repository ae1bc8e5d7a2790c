//! One direction's record protection: the AEAD key, how each record's nonce and
//! additional data are made (TLS 1.3, TLS 1.2 AES-GCM with its explicit nonce, TLS 1.2
//! ChaCha20-Poly1305), and TLS 1.3's inner content type.

use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};

use crate::schedule;
use crate::suite::{Aead, Suite};

/// The AEAD tag length of every suite we decrypt.
pub const TAG_LEN: usize = 16;

/// How a record's nonce and additional data are built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Nonces {
    /// RFC 8446 §5.2–5.3: nonce = IV ⊕ seq; additional data = the record header.
    Tls13,
    /// RFC 5288: nonce = 4-byte salt ‖ 8-byte explicit nonce sent before the ciphertext;
    /// additional data = seq ‖ type ‖ version ‖ plaintext length.
    Tls12Explicit,
    /// RFC 7905: nonce = IV ⊕ seq; additional data as TLS 1.2's.
    Tls12Xor,
}

/// A decrypted record: its content type (TLS 1.3: the inner one) and the plaintext's place
/// in the record's payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opened {
    pub content_type: u8,
    pub start: usize,
    pub end: usize,
}

/// One direction's key in one epoch.
pub struct RecordKey {
    key: LessSafeKey,
    iv: [u8; 12],
    nonces: Nonces,
}

impl std::fmt::Debug for RecordKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordKey")
            .field("nonces", &self.nonces)
            .finish_non_exhaustive()
    }
}

fn algorithm(aead: Aead) -> &'static aead::Algorithm {
    match aead {
        Aead::Aes128Gcm => &aead::AES_128_GCM,
        Aead::Aes256Gcm => &aead::AES_256_GCM,
        Aead::ChaCha20Poly1305 => &aead::CHACHA20_POLY1305,
    }
}

impl RecordKey {
    /// The key of a TLS 1.3 traffic secret.
    pub fn tls13(suite: &Suite, secret: &[u8]) -> Option<RecordKey> {
        if secret.len() != suite.hash.output_len() {
            return None;
        }
        let (key, iv) = schedule::tls13_key_iv(suite, secret);
        let key = UnboundKey::new(algorithm(suite.aead), &key).ok()?;
        Some(RecordKey {
            key: LessSafeKey::new(key),
            iv,
            nonces: Nonces::Tls13,
        })
    }

    /// The key of one side of a TLS 1.2 key block (`iv`: the fixed part).
    pub fn tls12(aead: Aead, key: &[u8], fixed_iv: &[u8]) -> Option<RecordKey> {
        let key = UnboundKey::new(algorithm(aead), key).ok()?;
        let mut iv = [0u8; 12];
        let nonces = match aead {
            Aead::ChaCha20Poly1305 => {
                iv.copy_from_slice(fixed_iv.get(..12)?);
                Nonces::Tls12Xor
            }
            Aead::Aes128Gcm | Aead::Aes256Gcm => {
                iv[..4].copy_from_slice(fixed_iv.get(..4)?);
                Nonces::Tls12Explicit
            }
        };
        Some(RecordKey {
            key: LessSafeKey::new(key),
            iv,
            nonces,
        })
    }

    fn xor_nonce(&self, seq: u64) -> Nonce {
        let mut n = self.iv;
        for (b, s) in n[4..].iter_mut().zip(seq.to_be_bytes()) {
            *b ^= s;
        }
        Nonce::assume_unique_for_key(n)
    }

    /// TLS 1.2 GCM's explicit nonce of a record (the sequence number, for most senders):
    /// where a resynchronisation starts looking.
    pub fn explicit_nonce(&self, payload: &[u8]) -> Option<u64> {
        (self.nonces == Nonces::Tls12Explicit)
            .then(|| Some(u64::from_be_bytes(payload.get(..8)?.try_into().ok()?)))
            .flatten()
    }

    /// Decrypts one record's payload in place at sequence number `seq`; `None` when the tag
    /// does not verify (or the record is too short to hold one). The payload is left
    /// scrambled either way.
    pub fn open(&self, seq: u64, header: &[u8; 5], payload: &mut [u8]) -> Option<Opened> {
        match self.nonces {
            Nonces::Tls13 => {
                let plain = self
                    .key
                    .open_in_place(self.xor_nonce(seq), Aad::from(*header), payload)
                    .ok()?;
                // The inner content type is the last non-zero byte; zeros after it pad.
                let end = plain.iter().rposition(|&b| b != 0)?;
                Some(Opened {
                    content_type: plain[end],
                    start: 0,
                    end,
                })
            }
            Nonces::Tls12Explicit | Nonces::Tls12Xor => {
                let explicit = if self.nonces == Nonces::Tls12Explicit {
                    8
                } else {
                    0
                };
                let plain_len = payload.len().checked_sub(explicit + TAG_LEN)?;
                let mut aad = [0u8; 13];
                aad[..8].copy_from_slice(&seq.to_be_bytes());
                aad[8..11].copy_from_slice(&header[..3]);
                aad[11..].copy_from_slice(&(plain_len as u16).to_be_bytes());
                let nonce = if explicit == 8 {
                    let mut n = self.iv;
                    n[4..].copy_from_slice(&payload[..8]);
                    Nonce::assume_unique_for_key(n)
                } else {
                    self.xor_nonce(seq)
                };
                let plain = self
                    .key
                    .open_in_place(nonce, Aad::from(aad), &mut payload[explicit..])
                    .ok()?;
                Some(Opened {
                    content_type: header[0],
                    start: explicit,
                    end: explicit + plain.len(),
                })
            }
        }
    }
}
