//! EXPERIMENT (#12, measured in BENCHMARKS §4f, not shipped): the capture's records through a
//! perf buffer (`bpf_perf_event_output` with the skb as context, which appends the skb's
//! bytes after the header in one helper call) instead of the per-CPU ring buffers. Turned on
//! with FIXSCOPE_EXPERIMENT_OUTPUT=perf; consumed with libbpf's perf_buffer, which only counts
//! and checks the records (they are not handed on as segments).

use std::os::raw::{c_int, c_void};

use libbpf_rs::libbpf_sys;

pub fn enabled() -> bool {
    std::env::var("FIXSCOPE_EXPERIMENT_OUTPUT").is_ok_and(|v| v == "perf")
}

#[derive(Default)]
pub struct Tally {
    pub records: u64,
    pub lost: u64,
    pub bad: u64,
    pub bytes: u64,
}

pub struct PerfExperiment {
    pb: *mut libbpf_sys::perf_buffer,
    tally: Box<Tally>,
}

// SAFETY: the perf buffer is used only through &mut self.
unsafe impl Send for PerfExperiment {}

const HDR: usize = 80;

unsafe extern "C" fn on_sample(ctx: *mut c_void, _cpu: c_int, data: *mut c_void, size: u32) {
    // SAFETY: ctx is the Box<Tally> pointer given to perf_buffer__new; data has size bytes.
    let t = unsafe { &mut *(ctx as *mut Tally) };
    let d = unsafe { std::slice::from_raw_parts(data as *const u8, size as usize) };
    t.records += 1;
    t.bytes += u64::from(size);
    if d.len() < HDR {
        t.bad += 1;
        return;
    }
    // fxs_rec: len at 48, offset at 52 (here: where the payload starts in the copied bytes).
    let len = u32::from_ne_bytes([d[48], d[49], d[50], d[51]]) as usize;
    let poff = u32::from_ne_bytes([d[52], d[53], d[54], d[55]]) as usize;
    let Some(p) = d.get(HDR + poff..HDR + poff + len) else {
        t.bad += 1;
        return;
    };
    // bpf_cost's messages are all 'Q' or all 'R'.
    if !p.is_empty() && !(p.iter().all(|&b| b == b'Q') || p.iter().all(|&b| b == b'R')) {
        t.bad += 1;
    }
}

unsafe extern "C" fn on_lost(ctx: *mut c_void, _cpu: c_int, cnt: u64) {
    // SAFETY: as above.
    let t = unsafe { &mut *(ctx as *mut Tally) };
    t.lost += cnt;
}

impl PerfExperiment {
    pub fn new(map_fd: c_int, pages_per_cpu: usize) -> std::io::Result<Self> {
        let mut tally = Box::new(Tally::default());
        let opts = libbpf_sys::perf_buffer_opts {
            sz: std::mem::size_of::<libbpf_sys::perf_buffer_opts>() as _,
            // wakeup_events: a wakeup per this many records (like the rings' fill threshold).
            sample_period: 4096,
            ..Default::default()
        };
        // SAFETY: valid map fd; callbacks match the signatures; tally outlives pb (Drop).
        let pb = unsafe {
            libbpf_sys::perf_buffer__new(
                map_fd,
                pages_per_cpu as _,
                Some(on_sample),
                Some(on_lost),
                &mut *tally as *mut Tally as *mut c_void,
                &opts,
            )
        };
        if pb.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        Ok(PerfExperiment { pb, tally })
    }

    /// Consumes everything queued; records consumed.
    pub fn consume(&mut self) -> u64 {
        let before = self.tally.records;
        // SAFETY: pb is valid until Drop.
        unsafe { libbpf_sys::perf_buffer__consume(self.pb) };
        self.tally.records - before
    }

    pub fn tally(&self) -> &Tally {
        &self.tally
    }
}

impl Drop for PerfExperiment {
    fn drop(&mut self) {
        // SAFETY: pb came from perf_buffer__new and is freed once.
        unsafe { libbpf_sys::perf_buffer__free(self.pb) };
    }
}
