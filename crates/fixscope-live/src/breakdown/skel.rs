//! The generated skeleton of src/bpf/breakdown.bpf.c (`--breakdown`).

#[allow(clippy::all, clippy::pedantic, unsafe_op_in_unsafe_fn)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/breakdown.skel.rs"));
}

pub(crate) use generated::types;
pub(crate) use generated::{BreakdownSkel, BreakdownSkelBuilder, OpenBreakdownSkel};
