//! How a side of a ring waits: spinning on the shared index, sleeping in
//! the kernel on a futex, or spinning a while then sleeping (adaptive).
//! On these machines a spin hand-off costs ~0.1 us and a futex wake-up
//! across cores ~25-30 us each way, so the choice decides the latency at
//! low load; the result records which one ran.

use linux_futex::{AsFutex, Shared};
use std::sync::atomic::{AtomicU32, Ordering, fence};
use std::time::{Duration, Instant};
pub use wirebench_core::spec::Wait;

/// A futex word and a flag saying someone sleeps on it, on their own cache
/// line in the shared header.
#[repr(C)]
#[derive(Default)]
pub struct WakeWord {
    seq: AtomicU32,
    sleeping: AtomicU32,
}

impl WakeWord {
    /// Wakes the waiter if it sleeps. Call after publishing (a release
    /// store of the index the waiter reads).
    #[inline]
    pub fn notify(&self) {
        // Orders the publication before reading `sleeping`; pairs with the
        // fence in `Waiter::sleep` (Dekker: one of the two sees the other).
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::Relaxed) != 0 {
            self.seq.fetch_add(1, Ordering::Release);
            AsFutex::<Shared>::as_futex(&self.seq).wake(1);
        }
    }
}

/// Spin this long before sleeping in `adaptive` mode: about two wake-ups.
pub const ADAPTIVE_SPIN: Duration = Duration::from_micros(50);

/// A spin longer than this yields the CPU between checks (a syscall that
/// returns at once when no other thread waits for this CPU).
pub const YIELD_AFTER: Duration = Duration::from_micros(20);

#[derive(Debug, Clone, Copy)]
pub struct Waiter {
    pub wait: Wait,
}

impl Waiter {
    /// Waits until `ready()` holds or `timeout` passes; returns whether it holds.
    pub fn wait(&self, w: &WakeWord, mut ready: impl FnMut() -> bool, timeout: Duration) -> bool {
        if ready() {
            return true;
        }
        let start = Instant::now();
        let deadline = start + timeout;
        let spin_until = match self.wait {
            Wait::Spin => deadline,
            Wait::Futex => start,
            Wait::Adaptive => start + ADAPTIVE_SPIN.min(timeout),
        };
        let mut i: u32 = 0;
        if spin_until > start {
            loop {
                if ready() {
                    return true;
                }
                std::hint::spin_loop();
                i = i.wrapping_add(1);
                if i.is_multiple_of(128) {
                    let now = Instant::now();
                    if now >= spin_until {
                        break;
                    }
                    // A long spin may be keeping a thread of the same CPU (the
                    // other half of an async client) from running: let it.
                    if now >= start + YIELD_AFTER {
                        std::thread::yield_now();
                    }
                }
            }
        }
        if self.wait == Wait::Spin {
            return ready();
        }
        Self::sleep(w, ready, deadline)
    }

    fn sleep(w: &WakeWord, mut ready: impl FnMut() -> bool, deadline: Instant) -> bool {
        let futex = AsFutex::<Shared>::as_futex(&w.seq);
        loop {
            let seq = w.seq.load(Ordering::Acquire);
            w.sleeping.store(1, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            if ready() {
                w.sleeping.store(0, Ordering::Relaxed);
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                w.sleeping.store(0, Ordering::Relaxed);
                return false;
            }
            // Returns at once if `seq` moved (a wake-up we must not miss).
            let _ = futex.wait_for(seq, deadline - now);
            w.sleeping.store(0, Ordering::Relaxed);
            if ready() {
                return true;
            }
        }
    }
}
