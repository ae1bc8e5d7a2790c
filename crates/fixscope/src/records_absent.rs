//! `--records` and `--clickhouse` in a build without the `records` feature (`make demo`'s:
//! the Parquet writer's Arrow and Parquet crates are half of a build's compile time). The
//! flags are the same; given, they fail before anything is read and say how to get them.

use anyhow::Result;
use fixscope_core::Pipeline;

use crate::cli_records::RecordsArgs;

/// Why `--records` or `--clickhouse` cannot run in this build.
const NOT_BUILT: &str = "--records and --clickhouse need fixscope built with its `records` \
    feature (the default): this is `make demo`'s build, without it; `make build` makes one \
    with every feature";

/// Fails when the run asks for records; else nothing to do.
fn refuse(args: &RecordsArgs) -> Result<()> {
    if args.records.is_some() || args.clickhouse.is_some() {
        anyhow::bail!(NOT_BUILT);
    }
    Ok(())
}

/// Never made: a run that asks for records fails first.
pub enum RecordsFile {}

/// Never made, as [`RecordsFile`].
pub enum RecordsToAttach {}

impl RecordsToAttach {
    pub fn attach(self, _pipeline: &mut Pipeline) {
        match self {}
    }
}

impl RecordsFile {
    pub fn attach(
        args: &RecordsArgs,
        _pipeline: &mut Pipeline,
        _live: bool,
    ) -> Result<Option<Self>> {
        refuse(args).map(|()| None)
    }

    pub fn start(args: &RecordsArgs, _live: bool) -> Result<Option<(Self, RecordsToAttach)>> {
        refuse(args).map(|()| None)
    }

    pub fn finish(self) -> Result<()> {
        match self {}
    }
}

/// `fixscope check`: the ClickHouse URL is not read in this build; given, it is refused.
pub fn check_clickhouse_url(_url: &str) -> Result<()> {
    anyhow::bail!(NOT_BUILT)
}
