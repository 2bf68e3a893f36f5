//! One emulated block: its threads as coroutines on one worker OS thread, its barrier,
//! its warps' exchanges and its shared memory.
//!
//! Every GPU thread of the block is a stackful coroutine. The worker resumes the
//! ready ones in turn (in thread order; strict mode shuffles it, see `checks`); a
//! thread runs until it returns, reaches `sync_threads` or a warp operation (it then
//! yields). When no thread is ready: the lanes of a warp operation's mask that all wait
//! in it go on together (see `rendezvous`); failing that, a barrier that every live
//! thread of the block waits at releases them all (threads that returned count as
//! arrived, as with PTX's `bar.sync`). Anything else (a mask's lanes split between a
//! barrier and a warp operation, or waiting with other masks) is a deadlock on a GPU
//! and is reported, never waited on.

use core::cell::{Cell, RefCell, UnsafeCell};
use std::boxed::Box;
use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::ThreadCoords;
use super::checks::{Checks, Rng};
use super::fault::{self, Registration, Running, SharedRegion, Stop, Unwind};
use super::rendezvous::{Exchange, WarpSlots};

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

pub(super) const WARP: u32 = crate::arch::WARP_SIZE;

/// What the device API reaches through the worker's thread-local context while a
/// block runs.
pub(super) struct BlockCtx {
    yielder: Cell<*const Yielder<(), Wait>>,
    /// Linear index of the thread now running.
    current: Cell<u32>,
    threads: Cell<u32>,
    checks: Cell<Checks>,
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

/// Deposit `v` for this lane, wait for the other running lanes of `mask`, and return
/// the values of the lanes that met. Outside the emulator, a warp of one lane.
pub(crate) fn exchange(v: u64, mask: u32) -> Exchange {
    with_ctx(|c| {
        let t = c.current.get() as usize;
        let (w, lane) = (t / WARP as usize, t % WARP as usize);
        if mask & (1 << lane) == 0 {
            undefined(format!(
                "lane {lane} of warp {w} calls a warp operation with mask {mask:#010x}, \
                     which leaves it out (a lane must be in the mask it passes; \
                     warp::active_mask() or warp::FULL_MASK name the lanes that run)"
            ))
        }
        // SAFETY: one coroutine runs at a time on this worker; no reference into the
        // warp slots outlives these statements.
        unsafe { (&mut (*c.warps.get()))[w].deposit(lane, v, mask) };
        c.suspend(Wait::Warp);
        // SAFETY: as above.
        unsafe { (&(*c.warps.get()))[w].result(lane) }
    })
    .unwrap_or_else(|| {
        let mut values = [0; WARP as usize];
        values[0] = v;
        Exchange { values, arrived: 1 }
    })
}

/// What a shuffle reads from lane `src` (`< 32`) of the exchange `x` it took part in
/// with `mask`: that lane's value when it met too. Otherwise a GPU gives an undefined
/// value: reading a lane the block does not have traps; so does, in strict mode, one
/// outside `mask` or one that has returned; the default mode gives `None` (the caller
/// keeps its own value).
pub(crate) fn read_lane(x: &Exchange, mask: u32, src: u32) -> Option<u64> {
    if x.arrived & (1 << src) != 0 {
        return Some(x.values[src as usize]);
    }
    with_ctx(|c| {
        let t = c.current.get();
        let (w, lane, first) = (t / WARP, t % WARP, t - t % WARP);
        let n = c.threads.get();
        let here = format!("lane {lane} of warp {w} shuffles from lane {src}");
        if first + src >= n {
            undefined(format!(
                "{here}, which does not exist: the block's {n} threads leave its last \
                     warp {} lanes, and a GPU gives an undefined value for the others. \
                     Launch whole warps (a block size that is a multiple of 32), or \
                     shuffle within a mask of the lanes that exist",
                n - first
            ))
        }
        let strict = c.checks.get().strict;
        if strict && mask & (1 << src) == 0 {
            undefined(format!(
                "{here}, outside the operation's mask {mask:#010x}: a GPU gives an \
                     undefined value. Put the lane in the mask, or read a lane in it"
            ))
        }
        if strict {
            undefined(format!(
                "{here}, which has returned: a GPU gives an undefined value. Keep \
                     the lanes a shuffle reads running until it (no early return before \
                     it), or read a lane that runs"
            ))
        }
        None
    })
    .unwrap_or(None)
}

/// Stop the running thread: it did what a GPU leaves undefined.
fn undefined(message: String) -> ! {
    fault::unwind(Unwind::Undefined(message))
}

/// The running block's copy of the shared static at `addr` (`bytes` long, aligned to
/// `align`); the static itself outside the emulator.
pub(crate) fn shared_static(addr: *mut u8, bytes: usize, align: usize) -> *mut u8 {
    with_ctx(|c| {
        let fill = if c.checks.get().strict { POISON } else { 0 };
        copy_of(&mut c.shared.borrow_mut(), addr, bytes, align, fill)
    })
    .unwrap_or_else(|| {
        // Outside a launch (a kernel called as a plain function), each OS thread is a
        // one-thread block of its own: the static's memory would be shared between
        // concurrent callers (parallel tests), so each thread gets its own copy too.
        OUTSIDE_SHARED.with(|m| copy_of(&mut m.borrow_mut(), addr, bytes, align, 0))
    })
}

/// Strict mode's shared-memory filling, as `u128`s.
const POISON: u128 = u128::from_ne_bytes([oxide_abi::emu::POISON_BYTE; 16]);

std::thread_local! {
    /// This OS thread's copies of the shared statics it touched outside a launch.
    static OUTSIDE_SHARED: RefCell<Vec<(usize, Box<[u128]>)>> = const { RefCell::new(Vec::new()) };
}

/// The copy in `map` of the shared static at `addr`, made (filled with `fill`) on
/// first use.
fn copy_of(
    map: &mut Vec<(usize, Box<[u128]>)>,
    addr: *mut u8,
    bytes: usize,
    align: usize,
    fill: u128,
) -> *mut u8 {
    let key = addr as usize;
    if let Some((_, buf)) = map.iter_mut().find(|(k, _)| *k == key) {
        return aligned(buf, align);
    }
    // Allocating takes the allocator's lock: not a place to be stopped by Ctrl-C.
    fault::uninterruptible(|| {
        // u128s are 16-byte aligned; a larger alignment takes its slack from the end.
        let slack = align.saturating_sub(16);
        let mut buf: Box<[u128]> = (0..(bytes + slack).div_ceil(16)).map(|_| fill).collect();
        let p = aligned(&mut buf, align);
        map.push((key, buf));
        p
    })
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
    /// The order threads are resumed in (shuffled in strict mode).
    order: Vec<u32>,
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
    pub fn new(shared_bytes: usize, interrupts: u64, checks: Checks) -> Runner {
        Runner {
            stacks: Vec::new(),
            ctx: Box::new(BlockCtx {
                yielder: Cell::new(core::ptr::null()),
                current: Cell::new(0),
                threads: Cell::new(0),
                checks: Cell::new(checks),
                warps: UnsafeCell::new(Vec::new()),
                shared: RefCell::new(Vec::new()),
            }),
            dynamic: Some(SharedRegion::take(shared_bytes)),
            interrupts,
            order: Vec::new(),
            _registration: {
                fault::ensure_alt_stack();
                Registration::new()
            },
        }
    }

    /// Run every thread of block `block` (number `linear` in launch order) of a launch
    /// with `block_dim` × `grid_dim`.
    pub fn run(
        &mut self,
        kernel: &'static (dyn Fn() + Sync),
        (block, linear): ([u32; 3], u64),
        block_dim: [u32; 3],
        grid_dim: [u32; 3],
    ) -> Result<(), BlockFailure> {
        let n = block_dim.iter().product::<u32>();
        let ctx: *const BlockCtx = &*self.ctx;
        self.ctx.threads.set(n);
        // SAFETY: no exchange is in flight between blocks.
        let warps = unsafe { &mut *self.ctx.warps.get() };
        warps.clear();
        warps.extend((0..n.div_ceil(WARP)).map(|_| WarpSlots::new()));
        let checks = self.ctx.checks.get();
        let mut rng = checks.strict.then(|| Rng::for_block(checks.seed, linear));
        if rng.is_some() {
            self.poison_shared();
        }
        CTX.with(|c| c.set(ctx));
        super::reset_async_copies();
        // SAFETY: the region is 16-byte aligned, as large as the launch asks, and
        // outlives the block; reset below.
        let region = self.dynamic.as_ref().expect("a region until dropped");
        let previous = unsafe { super::set_dynamic_shared(region.base) };
        let previous_len = super::set_dynamic_shared_len(region.bytes);
        let coords = super::thread_coords();
        let result = self.schedule(kernel, n, block, block_dim, grid_dim, rng.as_mut());
        super::set_thread_coords(coords);
        // SAFETY: back to what it was.
        unsafe { super::set_dynamic_shared(previous) };
        super::set_dynamic_shared_len(previous_len);
        CTX.with(|c| c.set(core::ptr::null()));
        result
    }

    /// Strict mode: every block starts with its shared memory poisoned.
    fn poison_shared(&mut self) {
        let region = self.dynamic.as_ref().expect("a region until dropped");
        // SAFETY: the region's `bytes` are writable and no thread runs.
        unsafe { core::ptr::write_bytes(region.base, oxide_abi::emu::POISON_BYTE, region.bytes) };
        for (_, copy) in self.ctx.shared.borrow_mut().iter_mut() {
            copy.fill(POISON);
        }
    }

    fn schedule(
        &mut self,
        kernel: &'static (dyn Fn() + Sync),
        n: u32,
        block: [u32; 3],
        block_dim: [u32; 3],
        grid_dim: [u32; 3],
        mut shuffle: Option<&mut Rng>,
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
        let mut order = core::mem::take(&mut self.order);
        order.clear();
        order.extend(0..n);
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
            if let Some(rng) = shuffle.as_deref_mut() {
                rng.shuffle(&mut order);
            }
            for &t in &order {
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
                        let done = slot.take().expect("a panicked thread");
                        self.stacks.push(done.into_stack());
                        failed = Some(match payload.downcast::<Unwind>() {
                            Ok(stop) => match *stop {
                                Unwind::Interrupted => failure(
                                    oxide_abi::emu::STATUS_INTERRUPTED,
                                    t,
                                    "interrupted (Ctrl-C)".into(),
                                ),
                                Unwind::Undefined(message) => {
                                    failure(oxide_abi::emu::STATUS_UNDEFINED, t, message)
                                }
                            },
                            Err(payload) => {
                                failure(oxide_abi::emu::STATUS_TRAP, t, panic_message(payload))
                            }
                        });
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
            let (t, why) = deadlock(ctx, &state, n)
                .unwrap_or_else(|| (first_live, "waits for ever (a deadlock on a GPU)".into()));
            break Err(failure(
                oxide_abi::emu::STATUS_DIVERGENT_BARRIER,
                t,
                format!("thread {:?} {why}", coords(t).thread_idx),
            ));
        };
        self.order = order;
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

/// A warp's lanes that wait in a warp operation, and those still running (not
/// returned), as bits.
fn lanes_of(state: &[State], w: usize, n: u32) -> (u32, u32) {
    let first = w * WARP as usize;
    let mut waiting = 0u32;
    let mut live = 0u32;
    for (lane, s) in state[first..(first + WARP as usize).min(n as usize)]
        .iter()
        .enumerate()
    {
        match s {
            State::Done => {}
            State::At(Wait::Warp) => {
                waiting |= 1 << lane;
                live |= 1 << lane;
            }
            _ => live |= 1 << lane,
        }
    }
    (waiting, live)
}

/// Let every warp operation whose mask's running lanes all wait in it go on; true when
/// one did.
fn complete_warps(ctx: &BlockCtx, state: &mut [State], n: u32) -> bool {
    // SAFETY: no coroutine runs during scheduling.
    let warps = unsafe { &mut *ctx.warps.get() };
    let mut any = false;
    for (w, slots) in warps.iter_mut().enumerate() {
        let (waiting, live) = lanes_of(state, w, n);
        if waiting == 0 {
            continue;
        }
        let released = slots.complete(waiting, live);
        let first = w * WARP as usize;
        for lane in 0..WARP as usize {
            if released & (1 << lane) != 0 {
                state[first + lane] = State::Ready;
            }
        }
        any |= released != 0;
    }
    any
}

/// For a block where nothing can go on and some threads wait in warp operations: one
/// of them and why it waits for ever.
fn deadlock(ctx: &BlockCtx, state: &[State], n: u32) -> Option<(u32, String)> {
    // SAFETY: no coroutine runs during scheduling.
    let warps = unsafe { &*ctx.warps.get() };
    warps.iter().enumerate().find_map(|(w, slots)| {
        let (waiting, live) = lanes_of(state, w, n);
        let (lane, mask, missing) = slots.blocked(waiting, live)?;
        let first = (w as u32) * WARP;
        let elsewhere = if waiting & (1 << missing) != 0 {
            format!(
                "waits in a warp operation with mask {:#010x}",
                slots.mask_of(missing)
            )
        } else {
            "waits at sync_threads".into()
        };
        Some((
            first + lane,
            format!(
                "(lane {lane} of warp {w}) waits in a warp operation with mask {mask:#010x}, \
                 which lane {missing} never reaches (it {elsewhere}); on a GPU this hangs. \
                 Every running lane of the mask must reach the same warp operation with \
                 the same mask"
            ),
        ))
    })
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
