//! Choosing the reporter for stdout, and treating a closed pipe as a normal end.

use std::io::{self, Write};

use fixscope_core::report::json::JsonReporter;
use fixscope_core::report::text::TextReporter;
use fixscope_core::report::Reporter;

/// The stdout reporter the flags ask for.
pub fn stdout_reporter(json: bool) -> Box<dyn Reporter> {
    let out = io::BufWriter::new(io::stdout());
    if json {
        Box::new(JsonReporter::new(out))
    } else {
        Box::new(TextReporter::new(out))
    }
}

/// `fixscope pcap big.pcap | head` must end quietly, not with an error.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Flushes stdout, ignoring a closed pipe.
pub fn flush_stdout() {
    let _ = io::stdout().flush();
}
