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
    open.load().map_err(load_failed)
}

/// The error for a program load that failed. The probes said the kernel has every feature
/// the programs need (`load::prepare_kernel` ran first), so it is the verifier's refusal:
/// the hint says where its log is and what to send. Here, next to the one load it
/// describes, so the skeleton does not reach back into `load`, which builds on it.
fn load_failed(e: libbpf_rs::Error) -> LiveError {
    LiveError::load(
        "fixscope.bpf.o: the kernel's verifier rejected the programs (its log is printed \
         with -v; `fixscope check` shows which kernel features the programs found — please \
         send both with an issue)",
        e,
    )
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

#[cfg(test)]
mod tests {
    use std::mem::MaybeUninit;

    use libbpf_rs::libbpf_sys::bpf_insn;
    use libbpf_rs::skel::SkelBuilder;
    use libbpf_rs::OpenObject;

    use super::generated::FixscopeSkelBuilder;

    const BPF_JMP: u8 = 0x05;
    const BPF_JMP32: u8 = 0x06;
    const BPF_JA: u8 = 0x00;
    const BPF_CALL: u8 = 0x80;
    const BPF_EXIT: u8 = 0x90;
    const BPF_LD_IMM64: u8 = 0x18;

    /// Where control can go after instruction `t`.
    fn successors(insns: &[bpf_insn], t: usize) -> Vec<usize> {
        let i = &insns[t];
        let (class, op) = (i.code & 0x07, i.code & 0xf0);
        let target = || (t as i64 + 1 + i64::from(i.off)) as usize;
        if i.code == BPF_LD_IMM64 {
            return vec![t + 2]; // two slots
        }
        if class != BPF_JMP && class != BPF_JMP32 {
            return vec![t + 1];
        }
        match op {
            BPF_EXIT => vec![],
            BPF_CALL => vec![t + 1], // helpers return; the programs have no subprograms
            BPF_JA => vec![target()],
            _ => vec![t + 1, target()],
        }
    }

    /// An edge (from, to) that closes a cycle in the control flow, if there is one.
    fn closing_edge(insns: &[bpf_insn]) -> Option<(usize, usize)> {
        // 0 unseen, 1 on the depth-first stack, 2 done.
        let mut state = vec![0u8; insns.len()];
        let mut stack = vec![(0usize, successors(insns, 0), 0usize)];
        state[0] = 1;
        while let Some((t, succ, k)) = stack.last_mut() {
            let Some(&w) = succ.get(*k) else {
                state[*t] = 2;
                stack.pop();
                continue;
            };
            *k += 1;
            let from = *t;
            assert!(w < insns.len(), "insn {from} jumps out of the program");
            match state[w] {
                0 => {
                    state[w] = 1;
                    stack.push((w, successors(insns, w), 0));
                }
                1 => return Some((from, w)),
                _ => {}
            }
        }
        None
    }

    /// Linux < 6.4 (Debian 12's 6.1) rejects a loop whose header is entered by falling
    /// through from a non-jump instruction ("back-edge from insn X to X+1"), which is how
    /// clang 14 laid out the payload-chunk loop. Programs without any loop pass every
    /// verifier's CFG check whatever the layout, so this host-independent check guards the
    /// VM test (`make test-kernel`) on every `make test`.
    #[test]
    fn programs_have_no_loops() {
        let mut storage = MaybeUninit::<OpenObject>::uninit();
        let open = FixscopeSkelBuilder::default()
            .open(&mut storage)
            .expect("the embedded object opens (no kernel involved)");
        for prog in [&open.progs.fxs_ingress, &open.progs.fxs_egress] {
            let insns = prog.insns();
            assert!(insns.len() > 100, "{:?} has its code", prog.name());
            assert_eq!(
                closing_edge(insns),
                None,
                "{:?} has a loop (from insn, to insn): old verifiers may reject it",
                prog.name()
            );
        }
    }

    #[test]
    fn a_loop_is_found() {
        let insn = |code: u8, off: i16| bpf_insn {
            code,
            off,
            ..Default::default()
        };
        let mov = 0xb4; // w0 = imm
        let jne = 0x56; // if w0 != imm goto
        let exit = BPF_JMP | BPF_EXIT;
        // 0: mov; 1: mov; 2: if .. goto 1; 3: exit — a loop closed by a jump.
        let jumped = [insn(mov, 0), insn(mov, 0), insn(jne, -2), insn(exit, 0)];
        assert_eq!(closing_edge(&jumped), Some((2, 1)));
        // 0: goto 2; 1: mov; 2: if .. goto 4; 3: goto 1; 4: exit — and one whose header
        // (2) is entered by falling through from 1, the shape 6.1 rejects.
        let ja = BPF_JMP | BPF_JA;
        let fell = [
            insn(ja, 1),
            insn(mov, 0),
            insn(jne, 1),
            insn(ja, -3),
            insn(exit, 0),
        ];
        assert_eq!(closing_edge(&fell), Some((1, 2)));
        let straight = [insn(mov, 0), insn(jne, 1), insn(mov, 0), insn(exit, 0)];
        assert_eq!(closing_edge(&straight), None);
    }
}
