//! A `--by` tag no order carried is said on stderr, once, at the run's summary: every order
//! sits in `(none)` then, and the table alone does not say the tag was probably mistyped
//! (issue #36: `--by 9999` put 600 orders in `(none)` without a word).

use std::io;

use fixscope_core::group::ByField;
use fixscope_core::report::{IntervalReport, Reporter, SummaryReport};

use crate::say;

/// Warns, at the first summary, of each `--by` tag that requests were seen without.
#[derive(Default)]
pub struct ByTagsNeverCarried {
    warned: bool,
}

/// What the warning says of `tag`, `answered` orders having been measured without it.
pub fn never_carried_message(field: &ByField, answered: u64) -> String {
    let tag = match field {
        ByField::Tag(t) => *t,
        ByField::Named(name) => {
            return format!(
                "--by {name}: no request or response of the run carried field {name}; all \
                 {answered} answered orders are in (none)"
            )
        }
    };
    format!(
        "--by {tag}: no request or response carried tag {tag}; all {answered} answered orders are in \
         (none) — is the tag right? (--by takes FIX tag numbers, e.g. 55 Symbol, 1 Account)"
    )
}

impl Reporter for ByTagsNeverCarried {
    fn interval(&mut self, _: &IntervalReport<'_>) -> io::Result<()> {
        Ok(())
    }

    fn summary(&mut self, r: &SummaryReport<'_>) -> io::Result<()> {
        if self.warned {
            return Ok(());
        }
        let Some(by) = r.figures.by() else {
            return Ok(());
        };
        for tag in by.tags.iter().filter(|t| t.never_carried()) {
            say::warn(never_carried_message(&tag.field, tag.none.count()));
            self.warned = true;
        }
        Ok(())
    }
}
