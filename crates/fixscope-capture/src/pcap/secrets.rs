//! pcapng Decryption Secrets Blocks (DSB, type 0xA): key logs carried inside the capture
//! (`editcap --inject-secrets tls,keys.log`). Read before the run from the blocks ahead of
//! the first packet — where editcap puts them, and where they must be for a one-pass reader
//! to decrypt the packets after them.

use std::path::Path;

use pcap_parser::pcapng::SecretsType;
use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{Block, PcapBlockOwned, PcapError, PcapNGReader};

/// A DSB's secrets type for an NSS key log (`TLSK`).
pub const DSB_TLS_KEY_LOG: u32 = 0x544c_534b;

/// Blocks read at most before giving up looking (a file with no packets at all).
const MAX_LEADING_BLOCKS: usize = 4096;

/// The NSS key log texts of the DSBs before `path`'s first packet (none for a pcap file,
/// or a file that cannot be read: the run itself reports that).
pub fn tls_key_log_blocks(path: &Path) -> Vec<Vec<u8>> {
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let Ok(mut reader) = PcapNGReader::new(1 << 16, file) else {
        return Vec::new(); // not pcapng
    };
    let mut texts = Vec::new();
    for _ in 0..MAX_LEADING_BLOCKS {
        match reader.next() {
            Ok((offset, block)) => {
                let done = match block {
                    PcapBlockOwned::NG(Block::DecryptionSecrets(dsb)) => {
                        if dsb.secrets_type == SecretsType(DSB_TLS_KEY_LOG) {
                            let len = (dsb.secrets_len as usize).min(dsb.data.len());
                            texts.push(dsb.data[..len].to_vec());
                        }
                        false
                    }
                    PcapBlockOwned::NG(Block::EnhancedPacket(_) | Block::SimplePacket(_)) => true,
                    _ => false,
                };
                reader.consume(offset);
                if done {
                    break;
                }
            }
            Err(PcapError::Incomplete(_)) => {
                if reader.refill().is_err() {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    texts
}
