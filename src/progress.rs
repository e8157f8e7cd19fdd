//! What a long call tells the thread that waits for it: how many units of its work are done
//! out of how many (blocks of rows of a factor, picks of a selection). The core counts; a
//! caller on another thread reads the count whenever it likes (the Python binding, every
//! 50 ms beside its signal poll, for a progress bar). Knows nothing of Python.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Units of a long call's work done and in all, updated by the core with relaxed atomic
/// adds (one per block or pick: nothing beside the work it counts) and read from any
/// thread. The total is known before the work starts; an early stop leaves `done` short.
#[derive(Debug, Default)]
pub struct Progress {
    done: AtomicUsize,
    total: AtomicUsize,
}

impl Progress {
    /// A count of nothing done out of nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// `units` more to do.
    pub(crate) fn add_total(&self, units: usize) {
        self.total.fetch_add(units, Ordering::Relaxed);
    }

    /// `units` more done.
    pub(crate) fn advance(&self, units: usize) {
        self.done.fetch_add(units, Ordering::Relaxed);
    }

    /// `(done, total)` now.
    pub fn get(&self) -> (usize, usize) {
        (
            self.done.load(Ordering::Relaxed),
            self.total.load(Ordering::Relaxed),
        )
    }
}
