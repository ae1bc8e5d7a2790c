//! Reading one message at a time from a blocking stream: a SoupBinTCP packet (2-byte
//! big-endian length of the rest) or a CME SOFH message (2-byte little-endian length of
//! the whole message, SOFH included, then encoding type 0xCAFE). Each message carries the
//! CLOCK_MONOTONIC stamps around the read() that returned its last byte — the truth files'
//! `read_call_ns` and `request_ns` (client: `first_ns`, `ack_ns`, `fill_ns`).

use std::io::{self, Read};

use fixscope_core::clock::monotonic_ns;

/// How a stream is cut into messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    SoupBin,
    Sofh,
}

const SOFH_LEN: usize = 4;
const SOFH_ENCODING: u16 = 0xCAFE;
const BUF_BYTES: usize = 64 * 1024;

/// One whole message (length prefix included) and the read() that completed it.
#[derive(Debug)]
pub struct Frame<'a> {
    pub bytes: &'a [u8],
    /// Just before that read() was called.
    pub read_call_ns: u64,
    /// Just after it returned.
    pub read_ns: u64,
}

/// What a read gave instead of a message.
#[derive(Debug)]
pub enum Stop {
    /// The peer closed the connection (at a message boundary or not).
    Closed,
    /// The stream's read timeout passed without a whole message.
    TimedOut,
    /// Not a message boundary: a SOFH with another encoding type or a length below it.
    BadFrame(String),
    Io(io::Error),
}

/// Buffers one direction of a connection and hands out its messages.
pub struct FrameReader {
    framing: Framing,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The stamps of the last read(): every message whole in `buf` was completed by it,
    /// since a read is only made when none is.
    read_call_ns: u64,
    read_ns: u64,
}

impl FrameReader {
    pub fn new(framing: Framing) -> Self {
        FrameReader {
            framing,
            buf: vec![0; BUF_BYTES],
            start: 0,
            end: 0,
            read_call_ns: 0,
            read_ns: 0,
        }
    }

    /// The length of the message at the front of the buffer, once its header is there.
    fn whole_len(&self) -> Result<Option<usize>, Stop> {
        let b = &self.buf[self.start..self.end];
        match self.framing {
            Framing::SoupBin if b.len() >= 2 => {
                Ok(Some(2 + usize::from(u16::from_be_bytes([b[0], b[1]]))))
            }
            Framing::Sofh if b.len() >= SOFH_LEN => {
                let len = usize::from(u16::from_le_bytes([b[0], b[1]]));
                let encoding = u16::from_le_bytes([b[2], b[3]]);
                if encoding != SOFH_ENCODING || len < SOFH_LEN {
                    return Err(Stop::BadFrame(format!(
                        "SOFH length {len}, encoding type {encoding:#06x}"
                    )));
                }
                Ok(Some(len))
            }
            _ => Ok(None),
        }
    }

    /// The next message, reading from `stream` when none is whole in the buffer.
    pub fn next(&mut self, stream: &mut impl Read) -> Result<Frame<'_>, Stop> {
        loop {
            if let Some(len) = self.whole_len()? {
                if self.end - self.start >= len {
                    let at = self.start;
                    self.start += len;
                    return Ok(Frame {
                        bytes: &self.buf[at..at + len],
                        read_call_ns: self.read_call_ns,
                        read_ns: self.read_ns,
                    });
                }
                if len > self.buf.len() {
                    self.buf.resize(len, 0);
                }
            }
            self.compact();
            let read_call_ns = monotonic_ns();
            let n = match stream.read(&mut self.buf[self.end..]) {
                Ok(0) => return Err(Stop::Closed),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(Stop::TimedOut)
                }
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Err(Stop::Closed),
                Err(e) => return Err(Stop::Io(e)),
            };
            self.read_ns = monotonic_ns();
            self.read_call_ns = read_call_ns;
            self.end += n;
        }
    }

    /// Moves a partial message to the front so the rest of it fits.
    fn compact(&mut self) {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out its bytes in the given chunks, one per read().
    struct Chunks(Vec<Vec<u8>>);

    impl Read for Chunks {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() {
                return Ok(0);
            }
            let c = self.0.remove(0);
            out[..c.len()].copy_from_slice(&c);
            Ok(c.len())
        }
    }

    #[test]
    fn cuts_soupbin_packets_across_reads() {
        let a = fixscope_ouch::encode::packet(b'U', b"hello");
        let b = fixscope_ouch::encode::packet(b'R', b"");
        let mut wire = a.clone();
        wire.extend_from_slice(&b);
        let mut s = Chunks(vec![wire[..3].to_vec(), wire[3..].to_vec()]);
        let mut r = FrameReader::new(Framing::SoupBin);
        let f = r.next(&mut s).unwrap();
        assert_eq!(f.bytes, &a[..]);
        let first_read = f.read_ns;
        assert!(f.read_call_ns <= f.read_ns);
        let f = r.next(&mut s).unwrap();
        assert_eq!(f.bytes, &b[..]);
        // Both were completed by the second read().
        assert_eq!(f.read_ns, first_read);
        assert!(matches!(r.next(&mut s), Err(Stop::Closed)));
    }

    #[test]
    fn cuts_sofh_messages_and_refuses_a_bad_one() {
        let m = fixscope_ilink3::encode::sequence(7, 1);
        let mut wire = m.clone();
        wire.extend_from_slice(&m);
        let mut s = Chunks(wire.chunks(5).map(<[u8]>::to_vec).collect());
        let mut r = FrameReader::new(Framing::Sofh);
        assert_eq!(r.next(&mut s).unwrap().bytes, &m[..]);
        assert_eq!(r.next(&mut s).unwrap().bytes, &m[..]);
        let mut bad = Chunks(vec![vec![20, 0, 0xca, 0xfe, 0, 0]]);
        let mut r = FrameReader::new(Framing::Sofh);
        assert!(matches!(r.next(&mut bad), Err(Stop::BadFrame(_))));
    }
}
