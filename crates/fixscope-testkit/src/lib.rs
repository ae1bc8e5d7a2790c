//! Helpers shared by fixscope's tests (a dev-dependency of every crate; never shipped).
//!
//! One rule for a test that cannot run here: it **fails loudly**, naming what is missing
//! ([`require_root`], [`require_tool`], [`require_kernel`]). No test skips silently.

pub mod data;
pub mod fix;
pub mod need;
pub mod netns;
pub mod tc;
#[cfg(feature = "tls")]
pub mod tls_session;

pub use data::test_data;
pub use need::{
    kernel_at_least, kernel_version, require_kernel, require_root, require_tool, serial,
};
pub use netns::{enter_netns, run, Netns, NetnsPair};
