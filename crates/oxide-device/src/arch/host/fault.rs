//! Faults and interrupts of emulated threads, turned into launch errors.
//!
//! An emulated thread runs on a coroutine stack with a guard page below it, and a
//! block's dynamic shared memory ends at a guard page (see [`SharedRegion`]). A stack
//! overflow, an access past the launch's shared memory or any other invalid access
//! raises SIGSEGV/SIGBUS on the worker; the handler (on an alternate signal stack,
//! since the thread's own stack may be the one exhausted) checks that the faulting
//! code runs on the current coroutine's stack and, if so, makes the coroutine return
//! the fault instead of letting the process die. Faults anywhere else go to the
//! handler that was installed before (Python's faulthandler, or the default).
//!
//! Ctrl-C: while a launch runs, SIGINT increments [`INTERRUPTS`] and then runs the
//! previous handler (Python's, which schedules `KeyboardInterrupt`). Workers see the
//! count change at barriers, warp operations and between blocks; a thread in a loop
//! that reaches none of those is stopped by SIGURG (sent to every registered worker)
//! the same way as a fault. A thread stopped asynchronously is not unwound: a lock it
//! held would stay held for the rest of the process. So code that takes a lock or
//! allocates (`printf` holds stdout's lock and the allocator's) runs
//! [`uninterruptible`]: SIGURG leaves such a thread alone, and it stops by unwinding
//! when the section ends. Unwinding (a panic) is never stopped from a handler either.

use core::cell::Cell;
use core::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};

use std::format;
use std::string::String;

use corosensei::trap::CoroutineTrapHandler;

/// Why a coroutine was stopped from a signal handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stop {
    /// SIGSEGV/SIGBUS at `addr`, with the thread's stack pointer then.
    Fault { addr: usize, sp: usize },
    /// Ctrl-C during the launch.
    Interrupted,
}

/// What the signal handler needs about the coroutine running on this OS thread.
#[derive(Clone, Copy)]
pub(super) struct Running {
    pub handler: CoroutineTrapHandler<Option<Stop>>,
    /// `INTERRUPTS` when the launch started.
    pub interrupts: u64,
}

/// Why an emulated thread unwinds, other than a panic of its own.
pub(super) enum Unwind {
    /// Ctrl-C reached it in an uninterruptible section, which it has now left.
    Interrupted,
    /// It did what a GPU leaves undefined; the message says what.
    Undefined(String),
}

std::thread_local! {
    static RUNNING: Cell<Option<Running>> = const { Cell::new(None) };
    /// Depth of uninterruptible sections (and unwinding) of the running coroutine;
    /// SIGURG does not stop it while this is not 0.
    static DEFERRED: Cell<u32> = const { Cell::new(0) };
}

/// Run `f`, which may take a lock or allocate, where SIGURG cannot stop the thread;
/// an interrupt that came meanwhile stops it (by unwinding) once `f` returns.
pub(crate) fn uninterruptible<R>(f: impl FnOnce() -> R) -> R {
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            DEFERRED.with(|d| d.set(d.get().saturating_sub(1)));
        }
    }
    DEFERRED.with(|d| d.set(d.get() + 1));
    let leave = Leave;
    let r = f();
    drop(leave);
    if DEFERRED.with(Cell::get) == 0
        && RUNNING
            .with(Cell::get)
            .is_some_and(|r| interrupted(r.interrupts))
    {
        unwind(Unwind::Interrupted);
    }
    r
}

/// The running thread is unwinding (a panic, from the panic hook): keep SIGURG off it
/// until it is resumed no more (the unwinder takes locks of its own).
pub(super) fn unwinding() {
    DEFERRED.with(|d| d.set(d.get() + 1));
}

/// Stop the running emulated thread with `why` (the block turns it into the launch's
/// error).
pub(super) fn unwind(why: Unwind) -> ! {
    unwinding();
    std::panic::resume_unwind(std::boxed::Box::new(why))
}

/// Interrupts (SIGINT) seen while some launch was running.
pub(super) static INTERRUPTS: AtomicU64 = AtomicU64::new(0);

/// Whether an interrupt came after `since` (an earlier `INTERRUPTS` value).
pub(super) fn interrupted(since: u64) -> bool {
    INTERRUPTS.load(Ordering::Relaxed) != since
}

/// Mark the coroutine about to be resumed on this thread (None once it yielded). A
/// coroutine yields only outside uninterruptible sections.
pub(super) fn set_running(r: Option<Running>) {
    DEFERRED.with(|d| d.set(0));
    RUNNING.with(|c| c.set(r));
}

/// How a fault address reads to a user.
pub(super) fn describe(
    addr: usize,
    sp: usize,
    stack_bytes: usize,
    shared: &SharedRegion,
) -> String {
    let page = page_size();
    if addr >= shared.guard && addr < shared.guard + page {
        return format!(
            "dynamic shared memory accessed at byte {} of a launch that gave shared_mem={} \
             bytes (read DynamicSharedArray::<T>::len() to check the size)",
            addr - shared.base as usize,
            shared.bytes
        );
    }
    // Pushes and stack probes fault right at the stack pointer; a wild pointer almost
    // never lands that close to it.
    if addr.abs_diff(sp) < 16 * page {
        return format!(
            "stack overflow: the thread used more than the emulator's {} KiB stack (a large \
             local array or deep recursion; a GPU thread has at most 512 KiB of local memory)",
            stack_bytes / 1024
        );
    }
    format!("invalid memory access at address {addr:#x} (a wild or dangling pointer)")
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).unwrap_or(4096).max(4096)
}

/// A block's dynamic shared memory: `bytes` (rounded up to 16) ending right at a
/// PROT_NONE guard page, so an access past the launch's size faults.
pub(super) struct SharedRegion {
    map: *mut libc::c_void,
    map_len: usize,
    pub base: *mut u8,
    pub bytes: usize,
    guard: usize,
}

std::thread_local! {
    /// The last region this OS thread used, kept for its next launch (the caller's
    /// thread runs blocks of every launch): a map costs a few system calls.
    static SPARE_REGION: core::cell::RefCell<Option<SharedRegion>> =
        const { core::cell::RefCell::new(None) };
    /// This OS thread's alternate signal stack, made once.
    static ALT_STACK: core::cell::RefCell<Option<AltStack>> =
        const { core::cell::RefCell::new(None) };
}

/// Make sure this OS thread has an alternate signal stack (kept until it exits).
pub(super) fn ensure_alt_stack() {
    ALT_STACK.with(|a| {
        if a.borrow().is_none() {
            *a.borrow_mut() = Some(AltStack::ensure());
        }
    });
}

impl SharedRegion {
    /// A region of `bytes`: this thread's spare one when it has that size (shared
    /// memory starts undefined on a GPU too), else a new one.
    pub fn take(bytes: usize) -> SharedRegion {
        SPARE_REGION
            .with(|s| s.borrow_mut().take())
            .filter(|r| r.bytes == bytes)
            .unwrap_or_else(|| SharedRegion::new(bytes))
    }

    /// Keep the region for this thread's next launch.
    pub fn give_back(self) {
        SPARE_REGION.with(|s| *s.borrow_mut() = Some(self));
    }

    pub fn new(bytes: usize) -> SharedRegion {
        let page = page_size();
        let used = bytes.div_ceil(16) * 16;
        let data = used.div_ceil(page) * page;
        let map_len = data + page;
        // SAFETY: a fresh anonymous mapping; failure is checked.
        let map = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert!(
            map != libc::MAP_FAILED,
            "cannot map the block's shared memory"
        );
        let guard = map as usize + data;
        // SAFETY: the last page of the mapping just made.
        let ok = unsafe { libc::mprotect(guard as *mut _, page, libc::PROT_NONE) };
        assert_eq!(ok, 0, "cannot protect the shared memory guard page");
        SharedRegion {
            map,
            map_len,
            base: (guard - used) as *mut u8,
            bytes,
            guard,
        }
    }
}

impl Drop for SharedRegion {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer used.
        unsafe { libc::munmap(self.map, self.map_len) };
    }
}

/// An alternate signal stack for this OS thread while it runs blocks (unless it has
/// one already, e.g. from Python's faulthandler).
pub(super) struct AltStack {
    mine: Option<(*mut libc::c_void, usize)>,
}

const ALT_STACK_BYTES: usize = 64 * 1024;

impl AltStack {
    pub fn ensure() -> AltStack {
        // SAFETY: querying and setting this thread's signal stack; the mapping lives
        // until `drop` disables it.
        unsafe {
            let mut old: libc::stack_t = core::mem::zeroed();
            if libc::sigaltstack(core::ptr::null(), &mut old) == 0
                && old.ss_flags & libc::SS_DISABLE == 0
            {
                return AltStack { mine: None };
            }
            let p = libc::mmap(
                core::ptr::null_mut(),
                ALT_STACK_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                return AltStack { mine: None };
            }
            let new = libc::stack_t {
                ss_sp: p,
                ss_flags: 0,
                ss_size: ALT_STACK_BYTES,
            };
            if libc::sigaltstack(&new, core::ptr::null_mut()) != 0 {
                libc::munmap(p, ALT_STACK_BYTES);
                return AltStack { mine: None };
            }
            AltStack {
                mine: Some((p, ALT_STACK_BYTES)),
            }
        }
    }
}

impl Drop for AltStack {
    fn drop(&mut self) {
        if let Some((p, len)) = self.mine {
            // SAFETY: no signal handler runs on it once disabled.
            unsafe {
                let off = libc::stack_t {
                    ss_sp: core::ptr::null_mut(),
                    ss_flags: libc::SS_DISABLE,
                    ss_size: 0,
                };
                libc::sigaltstack(&off, core::ptr::null_mut());
                libc::munmap(p, len);
            }
        }
    }
}

// ---- worker registry: whom SIGURG goes to -------------------------------------------

const MAX_WORKERS: usize = 512;
static WORKERS: [AtomicI32; MAX_WORKERS] = [const { AtomicI32::new(0) }; MAX_WORKERS];

/// This OS thread, registered as a worker until dropped.
pub(super) struct Registration(Option<usize>);

impl Registration {
    pub fn new() -> Registration {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let slot = WORKERS.iter().position(|w| {
            w.compare_exchange(0, tid, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        });
        Registration(slot)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(i) = self.0 {
            WORKERS[i].store(0, Ordering::Release);
        }
    }
}

// ---- handlers ------------------------------------------------------------------------

type Action = libc::sigaction;

/// The handlers that were there before ours (SIGSEGV, SIGBUS, SIGURG, SIGINT), as
/// (handler address, flags); written before ours is installed.
static PREVIOUS: [(AtomicUsize, AtomicUsize); 4] =
    [const { (AtomicUsize::new(0), AtomicUsize::new(0)) }; 4];

fn slot(sig: libc::c_int) -> usize {
    match sig {
        libc::SIGSEGV => 0,
        libc::SIGBUS => 1,
        libc::SIGURG => 2,
        _ => 3,
    }
}

unsafe fn install(sig: libc::c_int) -> Action {
    // SAFETY (whole body): sigaction with valid pointers.
    unsafe {
        let mut old: Action = core::mem::zeroed();
        libc::sigaction(sig, core::ptr::null(), &mut old);
        let (h, f) = &PREVIOUS[slot(sig)];
        h.store(old.sa_sigaction, Ordering::Release);
        f.store(old.sa_flags as usize, Ordering::Release);
        let mut new: Action = core::mem::zeroed();
        new.sa_sigaction = on_signal as *const () as usize;
        new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut new.sa_mask);
        // SIGURG waits until the handler returns: the SIGINT handler sends it to its own
        // thread too, and it must then see the interrupted context, not the handler's.
        libc::sigaddset(&mut new.sa_mask, libc::SIGURG);
        libc::sigaction(sig, &new, core::ptr::null_mut());
        old
    }
}

/// Install the fault and SIGURG handlers (once per process).
pub(super) fn install_fault_handlers() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: installing process-wide handlers that chain to the previous ones.
        unsafe {
            for sig in [libc::SIGSEGV, libc::SIGBUS, libc::SIGURG] {
                install(sig);
            }
        }
    });
}

/// SIGINT is ours while at least one launch runs.
static SIGINT_USERS: std::sync::Mutex<(usize, Option<Action>)> = std::sync::Mutex::new((0, None));

/// Holds SIGINT for the launch; the previous handler comes back when the last launch
/// ends.
pub(super) struct InterruptGuard;

impl InterruptGuard {
    pub fn new() -> InterruptGuard {
        let mut users = SIGINT_USERS.lock().unwrap_or_else(|p| p.into_inner());
        if users.0 == 0 {
            // SAFETY: replaces SIGINT's handler; restored in `drop`.
            let old = unsafe { install(libc::SIGINT) };
            if old.sa_sigaction == libc::SIG_IGN {
                // Interrupts are ignored: keep it so.
                // SAFETY: puts back what was there.
                unsafe { libc::sigaction(libc::SIGINT, &old, core::ptr::null_mut()) };
            }
            users.1 = Some(old);
        }
        users.0 += 1;
        InterruptGuard
    }
}

impl Drop for InterruptGuard {
    fn drop(&mut self) {
        let mut users = SIGINT_USERS.lock().unwrap_or_else(|p| p.into_inner());
        users.0 -= 1;
        if users.0 == 0
            && let Some(old) = users.1.take()
        {
            // SAFETY: puts back the handler saved in `new`.
            unsafe { libc::sigaction(libc::SIGINT, &old, core::ptr::null_mut()) };
        }
    }
}

/// Call the handler that was installed before ours for `sig`.
unsafe fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let (h, f) = &PREVIOUS[slot(sig)];
    let handler = h.load(Ordering::Acquire);
    let flags = f.load(Ordering::Acquire) as libc::c_int;
    // SAFETY (whole body): calling a handler the process installed, as the kernel would.
    unsafe {
        if handler == libc::SIG_IGN {
            return;
        }
        if handler == libc::SIG_DFL {
            if sig == libc::SIGURG || sig == libc::SIGCHLD {
                return; // ignored by default
            }
            // Default action: reinstate it; the faulting instruction reruns (SIGSEGV)
            // or the signal is raised again (SIGINT) and ends the process.
            let mut dfl: Action = core::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(sig, &dfl, core::ptr::null_mut());
            if sig == libc::SIGINT {
                libc::raise(sig);
            }
            return;
        }
        if flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                core::mem::transmute(handler);
            f(sig, info, ctx);
        } else {
            let f: extern "C" fn(libc::c_int) = core::mem::transmute(handler);
            f(sig);
        }
    }
}

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    if sig == libc::SIGINT {
        INTERRUPTS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: getpid/tgkill are async-signal-safe; a stale tid gets a SIGURG that
        // its handler ignores (or none, once gone).
        unsafe {
            let pid = libc::getpid();
            for w in &WORKERS {
                let tid = w.load(Ordering::Acquire);
                if tid != 0 {
                    libc::syscall(libc::SYS_tgkill, pid, tid, libc::SIGURG);
                }
            }
            chain(sig, info, ctx);
        }
        return;
    }
    if sig == libc::SIGURG && DEFERRED.with(Cell::get) != 0 {
        // An uninterruptible section: it stops itself when the section ends.
        return;
    }
    if let Some(r) = RUNNING.with(Cell::get) {
        // SAFETY: the kernel passes a valid ucontext to an SA_SIGINFO handler.
        let sp = unsafe { regs::stack_pointer(ctx) };
        if r.handler.stack_ptr_in_bounds(sp) {
            let stop = if sig == libc::SIGURG {
                interrupted(r.interrupts).then_some(Stop::Interrupted)
            } else {
                // SAFETY: SIGSEGV/SIGBUS carry the faulting address.
                let addr = unsafe { (*info).si_addr() } as usize;
                Some(Stop::Fault { addr, sp })
            };
            if let Some(stop) = stop {
                // SAFETY: the interrupted code runs on this coroutine's stack (checked
                // above); the registers are updated as the trap handler requires.
                unsafe {
                    let regs = r.handler.setup_trap_handler(move || Some(stop));
                    regs::redirect(ctx, regs);
                }
                return;
            }
        }
    }
    // SAFETY: not ours: the previous handler decides.
    unsafe { chain(sig, info, ctx) }
}

#[cfg(target_arch = "x86_64")]
mod regs {
    use corosensei::trap::TrapHandlerRegs;

    pub unsafe fn stack_pointer(ctx: *mut libc::c_void) -> usize {
        let uc = ctx.cast::<libc::ucontext_t>();
        // SAFETY: upheld by the caller.
        unsafe { (*uc).uc_mcontext.gregs[libc::REG_RSP as usize] as usize }
    }

    pub unsafe fn redirect(ctx: *mut libc::c_void, r: TrapHandlerRegs) {
        let uc = ctx.cast::<libc::ucontext_t>();
        // SAFETY: upheld by the caller.
        let g = unsafe { &mut (*uc).uc_mcontext.gregs };
        g[libc::REG_RIP as usize] = r.rip as i64;
        g[libc::REG_RSP as usize] = r.rsp as i64;
        g[libc::REG_RBP as usize] = r.rbp as i64;
        g[libc::REG_RDI as usize] = r.rdi as i64;
        g[libc::REG_RSI as usize] = r.rsi as i64;
    }
}

#[cfg(target_arch = "aarch64")]
mod regs {
    use corosensei::trap::TrapHandlerRegs;

    pub unsafe fn stack_pointer(ctx: *mut libc::c_void) -> usize {
        let uc = ctx.cast::<libc::ucontext_t>();
        // SAFETY: upheld by the caller.
        unsafe { (*uc).uc_mcontext.sp as usize }
    }

    pub unsafe fn redirect(ctx: *mut libc::c_void, r: TrapHandlerRegs) {
        let uc = ctx.cast::<libc::ucontext_t>();
        // SAFETY: upheld by the caller.
        let m = unsafe { &mut (*uc).uc_mcontext };
        m.pc = r.pc;
        m.sp = r.sp;
        m.regs[0] = r.x0;
        m.regs[1] = r.x1;
        m.regs[29] = r.x29;
        m.regs[30] = r.lr;
    }
}
