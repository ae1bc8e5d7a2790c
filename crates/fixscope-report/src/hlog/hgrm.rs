//! `--hgrm FILE`: the cumulative percentile distribution as Java's
//! `outputPercentileDistribution` prints it, which HdrHistogram's web plotter
//! (<https://hdrhistogram.github.io/HdrHistogram/plotFiles.html>) reads.
//!
//! Values in µs (ns / [`HGRM_UNIT_RATIO`]), stated on the first line (a `#` line, which the
//! plotter skips). `FILE` holds `first_response`; the other stages with data go to
//! `FILE` with the stage before the extension (`run.ack.hgrm`), see [`hgrm_paths`].

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::writer::log_histogram;
use crate::report::{human_ns, IntervalReport, Reporter, SummaryReport};
use fixscope_orders::correlate::Stage;
use fixscope_orders::recorder::LatencyRecorder;

/// Values are written in µs.
pub const HGRM_UNIT_RATIO: f64 = 1000.0;

/// Where each stage's distribution goes: `first_response` to `path`, the others to `path`
/// with `.<stage>` before the extension.
pub fn hgrm_paths(path: &Path) -> [(Stage, PathBuf); Stage::COUNT] {
    Stage::EVERY.map(|stage| {
        if stage == Stage::FirstResponse {
            return (stage, path.to_path_buf());
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = match name.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() => format!("{stem}.{}.{ext}", stage.name()),
            _ => format!("{name}.{}", stage.name()),
        };
        (stage, path.with_file_name(name))
    })
}

/// Writes `rec`'s distribution. Values above fixscope's range are at the exact maximum
/// (as in the log), and the first line says how many.
pub fn write_hgrm(out: &mut impl Write, stage: Stage, rec: &LatencyRecorder) -> io::Result<()> {
    let h = log_histogram(rec)?;
    write!(
        out,
        "#[fixscope {} latency: values in microseconds (ns / {HGRM_UNIT_RATIO})",
        stage.name()
    )?;
    if rec.over_range() > 0 {
        write!(
            out,
            "; {} values above the range of {} are shown at the maximum {}",
            rec.over_range(),
            human_ns(rec.histogram().high() as f64),
            human_ns(rec.max_ns() as f64)
        )?;
    }
    writeln!(out, "]")?;
    let digits = usize::from(h.sigfig());
    writeln!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    )?;
    let mut total = 0u64;
    for v in h.iter_quantiles(5) {
        total += v.count_since_last_iteration();
        let value = v.value_iterated_to() as f64 / HGRM_UNIT_RATIO;
        let q = v.quantile_iterated_to();
        if q < 1.0 {
            writeln!(
                out,
                "{value:>12.digits$} {q:>2.12} {total:>10} {:>14.2}",
                1.0 / (1.0 - q)
            )?;
        } else {
            writeln!(out, "{value:>12.digits$} {q:>2.12} {total:>10}")?;
        }
    }
    writeln!(
        out,
        "#[Mean    = {:>12.digits$}, StdDeviation   = {:>12.digits$}]",
        h.mean() / HGRM_UNIT_RATIO,
        h.stdev() / HGRM_UNIT_RATIO
    )?;
    writeln!(
        out,
        "#[Max     = {:>12.digits$}, Total count    = {:>12}]",
        h.max() as f64 / HGRM_UNIT_RATIO,
        h.len()
    )?;
    // Java's sub-bucket count: 2^ceil(log2(2 * 10^digits)).
    let sub_buckets = 1u64 << (2.0 * 10f64.powi(i32::from(h.sigfig()))).log2().ceil() as u32;
    writeln!(
        out,
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
        h.buckets(),
        sub_buckets
    )
}

/// Writes the `.hgrm` files at each summary (the last one stays).
pub struct HgrmWriter {
    path: PathBuf,
}

impl HgrmWriter {
    pub fn new(path: &Path) -> Self {
        HgrmWriter {
            path: path.to_path_buf(),
        }
    }
}

impl Reporter for HgrmWriter {
    fn interval(&mut self, _: &IntervalReport<'_>) -> io::Result<()> {
        Ok(())
    }

    fn summary(&mut self, r: &SummaryReport<'_>) -> io::Result<()> {
        for (stage, path) in hgrm_paths(&self.path) {
            let rec = r.figures.cumulative(stage);
            if rec.count() == 0 && stage != Stage::FirstResponse {
                continue;
            }
            let file = File::create(&path).map_err(|e| {
                io::Error::new(e.kind(), format!("cannot create {}: {e}", path.display()))
            })?;
            let mut out = BufWriter::new(file);
            write_hgrm(&mut out, stage, rec)?;
            out.flush()?;
        }
        Ok(())
    }
}
