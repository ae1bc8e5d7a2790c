//! Byte scans over whole FIX messages, 16 bytes per instruction where the CPU allows: the
//! SOH positions of a 64-byte block as a bitmap, and the byte sum CheckSum (10) needs.
//!
//! Hand-written because these run on every byte of every message (the pipeline's hottest
//! loops, BENCHMARKS.md §4b2) and no crate offers them: memchr finds one SOH per call, which
//! for FIX's short fields costs more in call and setup than the search (a quarter of the
//! pipeline once); a bitmap finds all SOHs of 64 bytes at once and walking it is a
//! `trailing_zeros` per field. On x86_64 SSE2 is part of the base instruction set (every
//! x86_64 CPU has it, and Rust enables it for every x86_64 target), so no runtime detection
//! is needed; other targets take the portable SWAR path, which gives the same results
//! (tests compare both with a plain loop).

use super::SOH;

/// Bit `i` set when `block[i]` is SOH.
#[inline]
pub(crate) fn soh_mask64(block: &[u8; 64]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        sse2::eq_mask64(block, SOH)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        swar::eq_mask64(block, SOH)
    }
}

/// Bit `i` set when `bytes[i]` is SOH, for at most 64 bytes (bits past the end are 0).
#[inline]
pub(crate) fn soh_mask_upto64(bytes: &[u8]) -> u64 {
    match <&[u8; 64]>::try_from(bytes) {
        Ok(block) => soh_mask64(block),
        Err(_) => {
            // A short tail: copy into a zeroed block (0 is not SOH, so no stray bits).
            let mut block = [0u8; 64];
            let n = bytes.len().min(64);
            block[..n].copy_from_slice(&bytes[..n]);
            soh_mask64(&block)
        }
    }
}

/// The sum of all bytes (wrapping is fine: CheckSum only needs it modulo 256).
#[inline]
pub(crate) fn byte_sum(bytes: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        sse2::byte_sum(bytes)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        swar::byte_sum(bytes)
    }
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi64, _mm_and_si128, _mm_cmpeq_epi8, _mm_cvtsi128_si64, _mm_loadu_si128,
        _mm_movemask_epi8, _mm_sad_epu8, _mm_set1_epi8, _mm_setzero_si128, _mm_unpackhi_epi64,
    };

    #[inline]
    #[target_feature(enable = "sse2")]
    fn load(chunk: &[u8; 16]) -> __m128i {
        // SAFETY: `chunk` is a valid, readable 16-byte array; `_mm_loadu_si128` reads
        // exactly 16 bytes and has no alignment requirement.
        unsafe { _mm_loadu_si128(chunk.as_ptr().cast()) }
    }

    #[inline]
    pub(super) fn eq_mask64(block: &[u8; 64], byte: u8) -> u64 {
        // SAFETY: SSE2 is part of the x86_64 baseline: every x86_64 CPU has it (the only
        // requirement of a `#[target_feature(enable = "sse2")]` function).
        unsafe { eq_mask64_sse2(block, byte) }
    }

    #[inline]
    pub(super) fn byte_sum(bytes: &[u8]) -> u64 {
        // SAFETY: as above, SSE2 is part of the x86_64 baseline.
        unsafe { byte_sum_sse2(bytes) }
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn eq_mask64_sse2(block: &[u8; 64], byte: u8) -> u64 {
        let needle = _mm_set1_epi8(byte as i8);
        let mut mask = 0u64;
        for (i, chunk) in block.chunks_exact(16).enumerate() {
            let Ok(chunk) = <&[u8; 16]>::try_from(chunk) else {
                unreachable!("chunks_exact(16) yields 16 bytes")
            };
            let eq = _mm_cmpeq_epi8(load(chunk), needle);
            mask |= (_mm_movemask_epi8(eq) as u32 as u64) << (16 * i);
        }
        mask
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn sum16(chunk: &[u8; 16]) -> __m128i {
        // psadbw against zero: the 8 bytes of each half summed into that half's u64 lane.
        _mm_sad_epu8(load(chunk), _mm_setzero_si128())
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn byte_sum_sse2(bytes: &[u8]) -> u64 {
        /// A window into this gives a mask keeping the last `n` bytes of 16 (at `n`).
        const KEEP_LAST: [u8; 32] = {
            let mut m = [0u8; 32];
            let mut i = 16;
            while i < 32 {
                m[i] = 0xff;
                i += 1;
            }
            m
        };
        if bytes.len() < 16 {
            return bytes.iter().map(|&b| b as u64).sum();
        }
        // Two accumulators, so consecutive chunks do not wait on each other's add.
        let (mut a, mut b) = (_mm_setzero_si128(), _mm_setzero_si128());
        let mut pairs = bytes.chunks_exact(32);
        for pair in pairs.by_ref() {
            let (lo, hi) = pair.split_at(16);
            let (Ok(lo), Ok(hi)) = (<&[u8; 16]>::try_from(lo), <&[u8; 16]>::try_from(hi)) else {
                unreachable!("32 bytes split in two halves of 16")
            };
            a = _mm_add_epi64(a, sum16(lo));
            b = _mm_add_epi64(b, sum16(hi));
        }
        let mut rest = pairs.remainder();
        if rest.len() >= 16 {
            let Ok(chunk) = <&[u8; 16]>::try_from(&rest[..16]) else {
                unreachable!("16 bytes")
            };
            a = _mm_add_epi64(a, sum16(chunk));
            rest = &rest[16..];
        }
        if !rest.is_empty() {
            // The last 16 bytes of the message, of which only the final `rest.len()` are
            // not summed yet: the others are masked to 0 (one load instead of a byte loop).
            let n = rest.len();
            let (Ok(last), Ok(keep)) = (
                <&[u8; 16]>::try_from(&bytes[bytes.len() - 16..]),
                <&[u8; 16]>::try_from(&KEEP_LAST[n..n + 16]),
            ) else {
                unreachable!("16-byte windows")
            };
            let tail = _mm_and_si128(load(last), load(keep));
            b = _mm_add_epi64(b, _mm_sad_epu8(tail, _mm_setzero_si128()));
        }
        let sum = _mm_add_epi64(a, b);
        let lanes = _mm_add_epi64(sum, _mm_unpackhi_epi64(sum, sum));
        _mm_cvtsi128_si64(lanes) as u64
    }
}

/// The portable path (and the reference the SSE2 path is tested against on x86_64).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
mod swar {
    const LOW_BYTES: u64 = 0x00ff_00ff_00ff_00ff;

    #[inline]
    fn word(bytes: &[u8]) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(bytes);
        u64::from_le_bytes(w)
    }

    /// Exact per-byte equality flags (no borrow between bytes, unlike the classic
    /// "has zero byte" trick), gathered into one bit per byte by a multiply.
    #[inline]
    pub(super) fn eq_mask64(block: &[u8; 64], byte: u8) -> u64 {
        const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
        let needle = u64::from_ne_bytes([byte; 8]);
        let mut mask = 0u64;
        for (i, chunk) in block.chunks_exact(8).enumerate() {
            let x = word(chunk) ^ needle;
            // High bit of each byte set when that byte of x is nonzero.
            let nonzero = ((x & LOW7) + LOW7) | x;
            let zero_high = !nonzero & !LOW7;
            // Move the 8 high bits into the top byte, in order, and take them.
            let bits = ((zero_high >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56;
            mask |= bits << (8 * i);
        }
        mask
    }

    /// Adds 8 bytes at a time in four 16-bit lanes of byte pairs, folded every 128 words
    /// (128 × 2 × 255 < 65536, so no lane overflows into its neighbour).
    #[inline]
    pub(super) fn byte_sum(bytes: &[u8]) -> u64 {
        let mut total: u64 = 0;
        let mut words = bytes.chunks_exact(8);
        loop {
            let mut lanes: u64 = 0;
            let mut n = 0;
            for w in words.by_ref().take(128) {
                let x = word(w);
                lanes += (x & LOW_BYTES) + ((x >> 8) & LOW_BYTES);
                n += 1;
            }
            total += (lanes & 0xffff)
                + ((lanes >> 16) & 0xffff)
                + ((lanes >> 32) & 0xffff)
                + (lanes >> 48);
            if n < 128 {
                break;
            }
        }
        total + words.remainder().iter().map(|&b| b as u64).sum::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain_mask(bytes: &[u8]) -> u64 {
        bytes
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b == SOH)
            .fold(0, |m, (i, _)| m | 1 << i)
    }

    /// Bytes that differ from SOH by one bit (or only in the high bit) must not count.
    fn tricky(seed: u64, len: usize) -> Vec<u8> {
        const POOL: [u8; 8] = [SOH, 0x00, 0x81, 0x03, b'=', 0xff, 0x41, 0x80];
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                POOL[(x % 8) as usize]
            })
            .collect()
    }

    #[test]
    fn soh_masks_agree_with_a_plain_loop() {
        for seed in 0..500u64 {
            let bytes = tricky(seed, 64);
            let block: &[u8; 64] = bytes.as_slice().try_into().unwrap();
            let want = plain_mask(&bytes);
            assert_eq!(soh_mask64(block), want, "seed {seed}");
            assert_eq!(swar::eq_mask64(block, SOH), want, "swar, seed {seed}");
            for len in [0, 1, 7, 15, 16, 17, 33, 63] {
                assert_eq!(soh_mask_upto64(&bytes[..len]), plain_mask(&bytes[..len]));
            }
        }
    }

    #[test]
    fn byte_sums_agree_with_a_plain_sum() {
        let bytes: Vec<u8> = (0..5000u32)
            .map(|i| (i * 7919 % 251) as u8 | 0x80)
            .collect();
        for len in (0..100).chain([1023, 1024, 1025, 2047, 2048, 4999, 5000]) {
            let plain: u64 = bytes[..len].iter().map(|&b| b as u64).sum();
            assert_eq!(byte_sum(&bytes[..len]), plain, "length {len}");
            assert_eq!(swar::byte_sum(&bytes[..len]), plain, "swar, length {len}");
        }
        let all_ff = vec![0xffu8; 70_000];
        assert_eq!(byte_sum(&all_ff), 70_000 * 255);
        assert_eq!(swar::byte_sum(&all_ff), 70_000 * 255);
    }
}
