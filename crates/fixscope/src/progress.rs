//! The progress bar of long offline runs (`fixscope pcap`, issue #22): bytes and files read,
//! rate and ETA, drawn with indicatif on stderr — only when stderr is a terminal and the
//! reports go elsewhere (stdout not a terminal), so pipes, JSON, CI logs and a screen of
//! interval lines never get a byte of it. Off with `-v` (its lines would cut through it).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Redraws per second.
const HZ: u8 = 10;

pub struct ReadProgress {
    files_done: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    drawer: Option<JoinHandle<()>>,
}

impl ReadProgress {
    /// A bar for reading `captures`, if this run should show one.
    pub fn start(captures: &[PathBuf], verbose: bool) -> Option<ReadProgress> {
        let wanted = std::io::stderr().is_terminal() && !std::io::stdout().is_terminal();
        if !wanted || verbose || std::env::var_os("FIXSCOPE_NO_PROGRESS").is_some() {
            return None;
        }
        Some(Self::on(ProgressDrawTarget::stderr_with_hz(HZ), captures))
    }

    fn on(target: ProgressDrawTarget, captures: &[PathBuf]) -> ReadProgress {
        // The total is known for files; a pipe (`-`) gets a bar without one.
        let total: Option<u64> = captures
            .iter()
            .map(|p| {
                std::fs::metadata(p)
                    .ok()
                    .filter(|m| m.is_file())
                    .map(|m| m.len())
            })
            .sum();
        let files = captures.len();
        let bar = match total {
            Some(total) => ProgressBar::with_draw_target(Some(total), target).with_style(
                ProgressStyle::with_template(
                    "{bar:30} {bytes}/{total_bytes}  {msg}  {binary_bytes_per_sec}  ETA {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            ),
            None => ProgressBar::with_draw_target(None, target).with_style(
                ProgressStyle::with_template("{spinner} {bytes}  {msg}  {binary_bytes_per_sec}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            ),
        };
        let files_done = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        // Bytes read so far by earlier runs in this process (tests) are not this run's.
        let base = fixscope_core::pcap::bytes_read();
        let drawer = {
            let (files_done, stop) = (files_done.clone(), stop.clone());
            std::thread::Builder::new()
                .name("fixscope-progress".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        bar.set_position(fixscope_core::pcap::bytes_read() - base);
                        bar.set_message(format!(
                            "files {}/{files}",
                            files_done.load(Ordering::Relaxed)
                        ));
                        std::thread::sleep(Duration::from_millis(1000 / u64::from(HZ)));
                    }
                    bar.finish_and_clear();
                })
                .ok()
        };
        ReadProgress {
            files_done,
            stop,
            drawer,
        }
    }

    /// A file was read to its end.
    pub fn file_done(&self) {
        self.files_done.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for ReadProgress {
    /// Clears the bar (before the caller says anything more on stderr).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(drawer) = self.drawer.take() {
            let _ = drawer.join();
        }
    }
}
