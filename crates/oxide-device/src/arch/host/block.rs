//! One emulated block: its threads as coroutines on one worker OS thread, its barrier,
//! its warps' exchanges and its shared memory.
//!
//! Every GPU thread of the block is a stackful coroutine. The worker resumes the
//! ready ones in turn (linear thread order); a thread runs until it returns, reaches
//! `sync_threads` or a warp operation (it then yields). When no thread is ready:
//! a warp whose live lanes all wait in a warp operation completes it (they see a
//! snapshot of the lanes' deposited values); failing that, a barrier that every live
//! thread of the block waits at releases them all (threads that returned count as
//! arrived, as with PTX's `bar.sync`). Anything else (lanes split between a barrier and
//! a warp operation) is a deadlock on a GPU and is reported, never waited on.

use core::cell::{Cell, RefCell, UnsafeCell};
use std::boxed::Box;
use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::ThreadCoords;
use super::fault::{self, Registration, Running, SharedRegion, Stop};

/// Why a thread yielded to the worker.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Wait {
    Barrier,
    Warp,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Ready,
    At(Wait),
    Done,
}

/// Stack of each emulated thread: room for the 512 KiB of local memory a GPU thread can
/// have, plus the host's own frames. Pages are touched only as used, so a block of 1024
/// threads costs little real memory; a guard page below turns an overflow into an error.
const STACK_BYTES: usize = 1024 * 1024;

pub(super) const WARP: u32 = 32;

/// The lanes' values of one warp exchange.
#[derive(Clone, Copy)]
pub(crate) struct Exchange {
    pub values: [u64; WARP as usize],
    /// Lanes that took part (bit per lane).
    pub arrived: u32,
}

struct WarpSlots {
    deposit: [u64; WARP as usize],
    snapshot: Exchange,
}

/// What the device API reaches through the worker's thread-local context while a
/// block runs.
pub(super) struct BlockCtx {
    yielder: Cell<*const Yielder<(), Wait>>,
    /// Linear index of the thread now running.
    current: Cell<u32>,
    threads: Cell<u32>,
    warps: UnsafeCell<Vec<WarpSlots>>,
    /// `SharedArray` statics: the static's address → this worker's block copy. Kept
    /// across the worker's blocks (shared memory starts undefined on a GPU too).
    shared: RefCell<Vec<(usize, Box<[u128]>)>>,
}

std::thread_local! {
    static CTX: Cell<*const BlockCtx> = const { Cell::new(core::ptr::null()) };
}

fn with_ctx<R>(f: impl FnOnce(&BlockCtx) -> R) -> Option<R> {
    let p = CTX.with(Cell::get);
    // SAFETY: set only while the worker's `BlockCtx` lives (see `Runner::run`).
    (!p.is_null()).then(|| f(unsafe { &*p }))
}

impl BlockCtx {
    fn suspend(&self, why: Wait) {
        let y = self.yielder.get();
        // SAFETY: set by the running coroutine before it called into the kernel; the
        // yielder lives on that coroutine's stack, which is the one running now.
        unsafe { (*y).suspend(why) };
    }
}

/// Whether the current OS thread is running an emulated block.
pub(super) fn in_block() -> bool {
    with_ctx(|_| ()).is_some()
}

/// `sync_threads`: wait until every thread of the block is here.
pub(crate) fn barrier() {
    with_ctx(|c| c.suspend(Wait::Barrier));
}

/// This thread's lane and the number of lanes of its warp; (0, 1) outside the
/// emulator.
pub(crate) fn lane_and_width() -> (u32, u32) {
    with_ctx(|c| {
        let t = c.current.get();
        let first = t - t % WARP;
        (t % WARP, (c.threads.get() - first).min(WARP))
    })
    .unwrap_or((0, 1))
}

/// Deposit `v` for this lane, wait for the warp's other live lanes, and return every
/// lane's value. Outside the emulator, a warp of one lane.
pub(crate) fn exchange(v: u64) -> Exchange {
    with_ctx(|c| {
        let t = c.current.get() as usize;
        let (w, lane) = (t / WARP as usize, t % WARP as usize);
        // SAFETY: one coroutine runs at a time on this worker; no reference into the
        // warp slots outlives these statements.
        unsafe { (&mut (*c.warps.get()))[w].deposit[lane] = v };
        c.suspend(Wait::Warp);
        // SAFETY: as above.
        unsafe { (&(*c.warps.get()))[w].snapshot }
    })
    .unwrap_or_else(|| {
        let mut values = [0; WARP as usize];
        values[0] = v;
        Exchange { values, arrived: 1 }
    })
}

/// The running block's copy of the shared static at `addr` (`bytes` long, aligned to
/// `align`); the static itself outside the emulator.
pub(crate) fn shared_static(addr: *mut u8, bytes: usize, align: usize) -> *mut u8 {
    with_ctx(|c| copy_of(&mut c.shared.borrow_mut(), addr, bytes, align)).unwrap_or_else(|| {
        // Outside a launch (a kernel called as a plain function), each OS thread is a
        // one-thread block of its own: the static's memory would be shared between
        // concurrent callers (parallel tests), so each thread gets its own copy too.
        OUTSIDE_SHARED.with(|m| copy_of(&mut m.borrow_mut(), addr, bytes, align))
    })
}

std::thread_local! {
    /// This OS thread's copies of the shared statics it touched outside a launch.
    static OUTSIDE_SHARED: RefCell<Vec<(usize, Box<[u128]>)>> = const { RefCell::new(Vec::new()) };
}

/// The copy in `map` of the shared static at `addr`, made (zeroed) on first use.
fn copy_of(
    map: &mut Vec<(usize, Box<[u128]>)>,
    addr: *mut u8,
    bytes: usize,
    align: usize,
) -> *mut u8 {
    let key = addr as usize;
    if let Some((_, buf)) = map.iter_mut().find(|(k, _)| *k == key) {
        return aligned(buf, align);
    }
    // u128s are 16-byte aligned; a larger alignment takes its slack from the end.
    let slack = align.saturating_sub(16);
    let mut buf: Box<[u128]> = (0..(bytes + slack).div_ceil(16)).map(|_| 0).collect();
    let p = aligned(&mut buf, align);
    map.push((key, buf));
    p
}

/// The first `align`-aligned byte of `buf`.
fn aligned(buf: &mut [u128], align: usize) -> *mut u8 {
    let p = buf.as_mut_ptr().cast::<u8>();
    p.wrapping_add(p.align_offset(align.max(1)))
}

/// Where and why a block failed.
pub(super) struct BlockFailure {
    pub status: i32,
    pub thread: [u32; 3],
    pub message: String,
}

type Thread = Coroutine<(), Wait, Option<Stop>, DefaultStack>;

/// A worker's means to run blocks: its stacks and block context, reused block after
/// block.
pub(super) struct Runner {
    stacks: Vec<DefaultStack>,
    ctx: Box<BlockCtx>,
    /// Always `Some` until dropped (then given back to the thread's spare).
    dynamic: Option<SharedRegion>,
    /// `fault::INTERRUPTS` when the launch started.
    interrupts: u64,
    _registration: Registration,
}

impl Drop for Runner {
    fn drop(&mut self) {
        if let Some(region) = self.dynamic.take() {
            region.give_back();
        }
    }
}

impl Runner {
    pub fn new(shared_bytes: usize, interrupts: u64) -> Runner {
        Runner {
            stacks: Vec::new(),
            ctx: Box::new(BlockCtx {
                yielder: Cell::new(core::ptr::null()),
                current: Cell::new(0),
                threads: Cell::new(0),
                warps: UnsafeCell::new(Vec::new()),
                shared: RefCell::new(Vec::new()),
            }),
            dynamic: Some(SharedRegion::take(shared_bytes)),
            interrupts,
            _registration: {
                fault::ensure_alt_stack();
                Registration::new()
            },
        }
    }

    /// Run every thread of block `block` of a launch with `block_dim` × `grid_dim`.
    pub fn run(
        &mut self,
        kernel: &'static (dyn Fn() + Sync),
        block: [u32; 3],
        block_dim: [u32; 3],
        grid_dim: [u32; 3],
    ) -> Result<(), BlockFailure> {
        let n = block_dim.iter().product::<u32>();
        let ctx: *const BlockCtx = &*self.ctx;
        self.ctx.threads.set(n);
        // SAFETY: no exchange is in flight between blocks.
        let warps = unsafe { &mut *self.ctx.warps.get() };
        warps.clear();
        warps.extend((0..n.div_ceil(WARP)).map(|_| WarpSlots {
            deposit: [0; WARP as usize],
            snapshot: Exchange {
                values: [0; WARP as usize],
                arrived: 0,
            },
        }));
        CTX.with(|c| c.set(ctx));
        super::reset_async_copies();
        // SAFETY: the region is 16-byte aligned, as large as the launch asks, and
        // outlives the block; reset below.
        let region = self.dynamic.as_ref().expect("a region until dropped");
        let previous = unsafe { super::set_dynamic_shared(region.base) };
        let previous_len = super::set_dynamic_shared_len(region.bytes);
        let coords = super::thread_coords();
        let result = self.schedule(kernel, n, block, block_dim, grid_dim);
        super::set_thread_coords(coords);
        // SAFETY: back to what it was.
        unsafe { super::set_dynamic_shared(previous) };
        super::set_dynamic_shared_len(previous_len);
        CTX.with(|c| c.set(core::ptr::null()));
        result
    }

    fn schedule(
        &mut self,
        kernel: &'static (dyn Fn() + Sync),
        n: u32,
        block: [u32; 3],
        block_dim: [u32; 3],
        grid_dim: [u32; 3],
    ) -> Result<(), BlockFailure> {
        let ctx: &'static BlockCtx = {
            let p: *const BlockCtx = &*self.ctx;
            // SAFETY: every coroutine that holds it is finished or dropped before
            // `schedule` returns, and the box lives as long as the runner.
            unsafe { &*p }
        };
        let coords = |t: u32| ThreadCoords {
            thread_idx: [
                t % block_dim[0],
                t / block_dim[0] % block_dim[1],
                t / (block_dim[0] * block_dim[1]),
            ],
            block_idx: block,
            block_dim,
            grid_dim,
        };
        let mut threads: Vec<Option<Thread>> = (0..n).map(|_| None).collect();
        let mut state = std::vec![State::Ready; n as usize];
        let failure = |status, t: u32, message: String| BlockFailure {
            status,
            thread: coords(t).thread_idx,
            message,
        };
        let outcome = loop {
            if fault::interrupted(self.interrupts) {
                break Err(failure(
                    oxide_abi::emu::STATUS_INTERRUPTED,
                    0,
                    "interrupted (Ctrl-C)".into(),
                ));
            }
            let mut failed = None;
            for t in 0..n {
                if state[t as usize] != State::Ready {
                    continue;
                }
                super::set_thread_coords(coords(t));
                ctx.current.set(t);
                let slot = &mut threads[t as usize];
                let coroutine = slot.get_or_insert_with(|| {
                    let stack = self
                        .stacks
                        .pop()
                        .unwrap_or_else(|| DefaultStack::new(STACK_BYTES).expect("a thread stack"));
                    Coroutine::with_stack(stack, move |y: &Yielder<(), Wait>, ()| {
                        ctx.yielder.set(y);
                        kernel();
                        None
                    })
                });
                fault::set_running(Some(Running {
                    handler: coroutine.trap_handler(),
                    interrupts: self.interrupts,
                }));
                let resumed = std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| {
                    coroutine.resume(())
                }));
                fault::set_running(None);
                match resumed {
                    Ok(CoroutineResult::Yield(why)) => state[t as usize] = State::At(why),
                    Ok(CoroutineResult::Return(Some(stop))) => {
                        let done = slot.take().expect("a stopped thread");
                        self.stacks.push(done.into_stack());
                        failed = Some(match stop {
                            Stop::Interrupted => failure(
                                oxide_abi::emu::STATUS_INTERRUPTED,
                                t,
                                "interrupted (Ctrl-C)".into(),
                            ),
                            Stop::Fault { addr, sp } => failure(
                                oxide_abi::emu::STATUS_FAULT,
                                t,
                                fault::describe(
                                    addr,
                                    sp,
                                    STACK_BYTES,
                                    self.dynamic.as_ref().expect("a region until dropped"),
                                ),
                            ),
                        });
                        break;
                    }
                    Ok(CoroutineResult::Return(None)) => {
                        state[t as usize] = State::Done;
                        let done = slot.take().expect("a finished thread");
                        self.stacks.push(done.into_stack());
                    }
                    Err(payload) => {
                        let message = panic_message(payload);
                        let done = slot.take().expect("a panicked thread");
                        self.stacks.push(done.into_stack());
                        failed = Some(failure(oxide_abi::emu::STATUS_TRAP, t, message));
                        break;
                    }
                }
            }
            if let Some(f) = failed {
                break Err(f);
            }
            if complete_warps(ctx, &mut state, n) {
                continue;
            }
            let live: Vec<u32> = (0..n)
                .filter(|&t| state[t as usize] != State::Done)
                .collect();
            let Some(&first_live) = live.first() else {
                break Ok(());
            };
            let all_at_barrier = live
                .iter()
                .all(|&t| state[t as usize] == State::At(Wait::Barrier));
            if all_at_barrier {
                // PTX `bar.sync` counts threads that have exited as arrived (cuda-oxide's
                // examples rely on it), so the live threads' barrier completes.
                for &t in &live {
                    state[t as usize] = State::Ready;
                }
                continue;
            }
            let t = live
                .iter()
                .copied()
                .find(|&t| state[t as usize] == State::At(Wait::Warp))
                .unwrap_or(first_live);
            break Err(failure(
                oxide_abi::emu::STATUS_DIVERGENT_BARRIER,
                t,
                format!(
                    "thread {:?} waits in a warp operation that the other lanes of \
                     its warp never reach (they returned or wait at sync_threads): \
                     the emulator runs warp operations over every live lane of the warp",
                    coords(t).thread_idx
                ),
            ));
        };
        // Threads left suspended (a failed block) unwind and give their stacks back.
        for t in threads.into_iter().flatten() {
            let mut t = t;
            if t.started() && !t.done() {
                t.force_unwind();
            }
            self.stacks.push(t.into_stack());
        }
        outcome
    }
}

/// Complete the exchange of every warp whose live lanes all wait in a warp operation;
/// true when one completed.
fn complete_warps(ctx: &BlockCtx, state: &mut [State], n: u32) -> bool {
    // SAFETY: no coroutine runs during scheduling.
    let warps = unsafe { &mut *ctx.warps.get() };
    let mut any = false;
    for (w, slots) in warps.iter_mut().enumerate() {
        let first = w as u32 * WARP;
        let lanes = first..(first + WARP).min(n);
        let mut arrived = 0u32;
        let mut complete = true;
        for t in lanes.clone() {
            match state[t as usize] {
                State::Done => {}
                State::At(Wait::Warp) => arrived |= 1 << (t - first),
                _ => complete = false,
            }
        }
        if complete && arrived != 0 {
            slots.snapshot = Exchange {
                values: slots.deposit,
                arrived,
            };
            for t in lanes {
                if state[t as usize] == State::At(Wait::Warp) {
                    state[t as usize] = State::Ready;
                }
            }
            any = true;
        }
    }
    any
}

std::thread_local! {
    /// Where the last panic on this OS thread happened (set by the panic hook).
    static PANIC_LOCATION: core::cell::RefCell<Option<String>> = const { core::cell::RefCell::new(None) };
}

/// Record where a panic of an emulated thread happened (from the panic hook), for
/// [`panic_message`].
pub(super) fn record_panic_location(at: Option<String>) {
    PANIC_LOCATION.with(|p| *p.borrow_mut() = at);
}

/// The message of a caught panic, with where it happened.
pub(super) fn panic_message(payload: Box<dyn core::any::Any + Send>) -> String {
    let text = if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "the kernel panicked".to_string()
    };
    match PANIC_LOCATION.with(|p| p.borrow_mut().take()) {
        Some(at) => format!("panicked at {at}: {text}"),
        None => text,
    }
}
