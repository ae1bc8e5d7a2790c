//! The generated skeleton of src/bpf/tls_uprobe.bpf.c (`--tls-uprobes`).

#[allow(clippy::all, clippy::pedantic, unsafe_op_in_unsafe_fn)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/tls_uprobe.skel.rs"));
}

pub(crate) use generated::types;
pub(crate) use generated::{OpenTlsUprobeSkel, TlsUprobeSkel, TlsUprobeSkelBuilder};
