//! One monitor interface's libpcap handle: opened for a mirror (nanosecond timestamps of
//! the chosen source, a large kernel buffer, the watched ports' filter), read without
//! blocking, its statistics widened to 64 bits.
//!
//! libpcap on Linux reads a TPACKET_V3 memory-mapped ring when not in immediate mode: the
//! kernel fills blocks of packets and hands a block over when it is full or after the
//! read timeout ([`crate::config::BLOCK_TIMEOUT`]), so a busy mirror costs one wakeup per
//! block, not per packet. Immediate mode would make libpcap fall back to TPACKET_V2 (one
//! slot per packet, a wakeup each); the delay a block adds is invisible in every figure,
//! since the kernel stamps each packet when it arrives (docs/tap.md).

use std::ffi::CStr;
use std::os::fd::{AsRawFd, RawFd};

use fixscope_core::decode::LinkType;
use pcap::{Active, Capture, Inactive, Precision};

use crate::config::{TapConfig, TimestampSource, BLOCK_TIMEOUT};
use crate::error::TapError;
use crate::filter::filter_expression;

// libpcap functions the `pcap` crate does not wrap (it links the library).
extern "C" {
    fn pcap_list_tstamp_types(p: *mut libc::c_void, types: *mut *mut libc::c_int) -> libc::c_int;
    fn pcap_free_tstamp_types(types: *mut libc::c_int);
    fn pcap_tstamp_type_val_to_name(t: libc::c_int) -> *const libc::c_char;
}

/// libpcap's statistics are 32-bit and wrap; these are the running 64-bit sums.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Totals {
    pub received: u64,
    pub dropped: u64,
    pub if_dropped: u64,
}

pub(crate) struct InterfaceCapture {
    name: String,
    capture: Capture<Active>,
    link: LinkType,
    last: pcap::Stat,
    totals: Totals,
}

impl InterfaceCapture {
    pub fn open(name: &str, config: &TapConfig) -> Result<Self, TapError> {
        let open_error = |e: pcap::Error| TapError::Open {
            iface: name.to_string(),
            detail: e.to_string(),
        };
        let inactive = Capture::from_device(name).map_err(open_error)?;
        check_timestamp_type(name, &inactive, config.timestamps)?;
        let capture = inactive
            .tstamp_type(config.timestamps.pcap_type())
            .precision(Precision::Nano)
            .promisc(true)
            .snaplen(i32::try_from(config.snaplen).unwrap_or(i32::MAX))
            .buffer_size(i32::try_from(config.buffer_bytes).unwrap_or(i32::MAX))
            .timeout(i32::try_from(BLOCK_TIMEOUT.as_millis()).unwrap_or(1))
            .open()
            .map_err(|e| TapError::Open {
                iface: name.to_string(),
                detail: activation_error(name, e),
            })?;
        let mut capture = capture.setnonblock().map_err(open_error)?;
        let linktype = capture.get_datalink();
        let link = u32::try_from(linktype.0)
            .ok()
            .and_then(LinkType::from_linktype)
            .ok_or(TapError::UnsupportedLinkType {
                iface: name.to_string(),
                linktype: linktype.0,
            })?;
        // A tick form's keyframes are no TCP: the filter must let them through.
        let keyframes = fixscope_core::wire_stamp::chosen().needs_keyframes();
        let expression = filter_expression(&config.ports, config.ip_filter, keyframes);
        capture
            .filter(&expression, true)
            .map_err(|e| TapError::Filter {
                iface: name.to_string(),
                expression: expression.clone(),
                detail: e.to_string(),
            })?;
        let last = capture.stats().map_err(open_error)?;
        Ok(InterfaceCapture {
            name: name.to_string(),
            capture,
            link,
            last,
            totals: Totals::default(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn link(&self) -> LinkType {
        self.link
    }

    pub fn fd(&self) -> RawFd {
        self.capture.as_raw_fd()
    }

    /// Hands at most `max` waiting frames to `on_frame(ts_ns, frame)` without blocking;
    /// returns how many.
    pub fn read(
        &mut self,
        max: usize,
        on_frame: &mut dyn FnMut(u64, &[u8]),
    ) -> Result<usize, TapError> {
        self.capture
            .dispatch(Some(max), |packet| {
                let ts = packet.header.ts;
                // Precision::Nano: tv_usec holds nanoseconds.
                let ts_ns = (ts.tv_sec as u64)
                    .saturating_mul(1_000_000_000)
                    .saturating_add(ts.tv_usec as u64);
                on_frame(ts_ns, packet.data);
            })
            .map_err(|e| TapError::Read {
                iface: self.name.clone(),
                detail: e.to_string(),
            })
    }

    /// The statistics since the capture opened, read now.
    pub fn totals(&mut self) -> Result<Totals, TapError> {
        let now = self.capture.stats().map_err(|e| TapError::Read {
            iface: self.name.clone(),
            detail: e.to_string(),
        })?;
        let delta = |new: u32, old: u32| u64::from(new.wrapping_sub(old));
        self.totals.received += delta(now.received, self.last.received);
        self.totals.dropped += delta(now.dropped, self.last.dropped);
        self.totals.if_dropped += delta(now.if_dropped, self.last.if_dropped);
        self.last = now;
        Ok(self.totals)
    }
}

/// A clear error, before activation, when the interface cannot stamp packets the way asked
/// (libpcap would only warn, or fall back to host time stamps).
fn check_timestamp_type(
    name: &str,
    capture: &Capture<Inactive>,
    wanted: TimestampSource,
) -> Result<(), TapError> {
    if wanted == TimestampSource::Host {
        return Ok(());
    }
    let mut types: *mut libc::c_int = std::ptr::null_mut();
    // SAFETY: the handle is a live pcap_t created by pcap_create (not yet activated, as
    // pcap_list_tstamp_types allows); `types` receives an array libpcap allocates, of the
    // returned length, freed below with pcap_free_tstamp_types.
    let n = unsafe { pcap_list_tstamp_types(capture.as_ptr().cast(), &mut types) };
    let offered: Vec<libc::c_int> = if n > 0 && !types.is_null() {
        // SAFETY: libpcap wrote `n` ints at `types`.
        let list = unsafe { std::slice::from_raw_parts(types, n as usize) }.to_vec();
        // SAFETY: `types` came from pcap_list_tstamp_types and is freed once.
        unsafe { pcap_free_tstamp_types(types) };
        list
    } else {
        Vec::new()
    };
    if offered.contains(&(wanted.pcap_type() as libc::c_int)) {
        return Ok(());
    }
    let names: Vec<String> = if offered.is_empty() {
        vec!["host".to_string()]
    } else {
        offered
            .iter()
            .map(|&t| {
                // SAFETY: returns a static string or NULL for an unknown value.
                let p = unsafe { pcap_tstamp_type_val_to_name(t) };
                if p.is_null() {
                    t.to_string()
                } else {
                    // SAFETY: a NUL-terminated static string from libpcap.
                    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
                }
            })
            .collect()
    };
    Err(TapError::TimestampTypeUnsupported {
        iface: name.to_string(),
        wanted: wanted.name(),
        offers: names.join(", "),
    })
}

/// libpcap's activation errors, with what the user can do about the common ones.
fn activation_error(name: &str, e: pcap::Error) -> String {
    let text = e.to_string();
    if text.contains("No such device") || text.contains("doesn't exist") {
        format!("{text} (see `ip link` for the interfaces of this host)")
    } else if text.contains("ermission") || text.contains("not permitted") {
        format!("{text} (capturing needs root or CAP_NET_RAW)")
    } else if text.is_empty() {
        format!("libpcap could not activate {name}")
    } else {
        text
    }
}
