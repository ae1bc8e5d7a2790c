//! The loaded BPF object and the memory it borrows, owned by one small type.
//!
//! A libbpf-rs skeleton borrows the storage of its `OpenObject` (`FixscopeSkel<'obj>`).
//! bpftop keeps both on the stack of the one function that runs the tool; a capture is
//! returned from `open`, kept for the whole run and moved between threads, so it must own
//! the storage and the skeleton that borrows it together — a self-referential pair, which
//! safe Rust cannot express. [`OwnedSkel`] is that pair: every `Box::leak`, `ManuallyDrop`
//! and `unsafe impl Send` of the crate's skeleton handling is here, nowhere else.

use std::mem::{ManuallyDrop, MaybeUninit};
use std::ptr::NonNull;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::OpenObject;

use crate::LiveError;

#[allow(clippy::all, clippy::pedantic, unsafe_op_in_unsafe_fn)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/fixscope.skel.rs"));
}

pub(crate) use generated::types;
pub(crate) use generated::{FixscopeSkel, OpenFixscopeSkel};

/// A loaded (not attached) skeleton together with the heap block it borrows.
pub(crate) struct OwnedSkel {
    /// Borrows `*storage`. `'static` stands for "as long as `storage`", which the borrow
    /// checker cannot name; `get` hands it out only for the lifetime of `&self`. Dropped by
    /// hand, before `storage` is freed.
    skel: ManuallyDrop<FixscopeSkel<'static>>,
    /// From `Box::leak` in `load`; freed in `Drop`.
    storage: NonNull<MaybeUninit<OpenObject>>,
}

// SAFETY: `FixscopeSkel` is `Send` (libbpf objects may be used from any thread, one at a
// time, which `&`/`&mut` access through this owner ensures), and `storage` is a heap block
// that only this value and the skeleton it owns refer to, so moving the pair to another
// thread shares nothing.
unsafe impl Send for OwnedSkel {}

impl OwnedSkel {
    /// Opens the embedded BPF object, lets `configure` set its rodata and map sizes, and
    /// loads it into the kernel.
    pub(crate) fn load(
        configure: impl FnOnce(&mut OpenFixscopeSkel<'_>) -> Result<(), LiveError>,
    ) -> Result<OwnedSkel, LiveError> {
        let storage = NonNull::from(Box::leak(Box::new(MaybeUninit::<OpenObject>::uninit())));
        // SAFETY: `storage` is a live heap block nothing else refers to. The reference goes
        // only into the skeleton, which is dropped before the block is freed: inside
        // `open_and_load` on failure, in `Drop` otherwise.
        let obj: &'static mut MaybeUninit<OpenObject> = unsafe { &mut *storage.as_ptr() };
        match open_and_load(obj, configure) {
            Ok(skel) => Ok(OwnedSkel {
                skel: ManuallyDrop::new(skel),
                storage,
            }),
            Err(e) => {
                // SAFETY: the block came from `Box::leak` above, and the skeleton that
                // borrowed it was dropped when `open_and_load` returned.
                drop(unsafe { Box::from_raw(storage.as_ptr()) });
                Err(e)
            }
        }
    }

    pub(crate) fn get(&self) -> &FixscopeSkel<'_> {
        &self.skel
    }
}

fn open_and_load<'obj>(
    obj: &'obj mut MaybeUninit<OpenObject>,
    configure: impl FnOnce(&mut OpenFixscopeSkel<'_>) -> Result<(), LiveError>,
) -> Result<FixscopeSkel<'obj>, LiveError> {
    let mut open = generated::FixscopeSkelBuilder::default()
        .open(obj)
        .map_err(|e| LiveError::load("opening the BPF object", e))?;
    configure(&mut open)?;
    open.load()
        .map_err(|e| LiveError::load("fixscope.bpf.o", e))
}

impl Drop for OwnedSkel {
    fn drop(&mut self) {
        // SAFETY: the skeleton is dropped exactly once, here, while the storage it borrows
        // is still allocated.
        unsafe { ManuallyDrop::drop(&mut self.skel) };
        // SAFETY: the block came from `Box::leak` in `load`, and the skeleton that
        // borrowed it is gone.
        drop(unsafe { Box::from_raw(self.storage.as_ptr()) });
    }
}
