//! Thread pools kept for the life of the process, one per thread count.
//!
//! Building a rayon pool spawns its threads, which take ~90 µs to be ready for work: as long
//! as a 65-row prediction takes on one thread, and a fit's first pass (its set-up pass over
//! `K`) sometimes started while the second thread was still coming up (6 ms or 10–11 ms
//! from one fit to the next at m = 4,000). So each thread count gets one pool, made on first
//! use and shared by every later call, its threads asleep in between. A child made by
//! `fork` (Python's `multiprocessing` on Linux) has none of its parent's threads: pools are
//! tagged with the process that made them, and a child makes its own. Calls from several
//! threads at once share a pool's threads rather than each starting its own (which
//! oversubscribed the cores): results do not change, since every sum has a fixed order, but
//! a call may wait for another's work.

use crate::error::{Error, Result};
use crate::tuning::KEPT_POOLS;
use rayon::ThreadPool;
use std::sync::{Arc, Mutex, PoisonError};

/// The pools made so far: (process id, threads, pool), the most recently used last.
static POOLS: Mutex<Vec<(u32, usize, Arc<ThreadPool>)>> = Mutex::new(Vec::new());

/// The process's pool of `n_threads` threads (at least one), made on first use.
pub(crate) fn shared(n_threads: usize) -> Result<Arc<ThreadPool>> {
    let threads = n_threads.max(1);
    let process = std::process::id();
    let mut pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
    if pools.iter().any(|(owner, ..)| *owner != process) {
        // A parent's pools, inherited through `fork`: their threads do not exist here.
        // Forgotten, not dropped: dropping would signal threads this process does not have.
        std::mem::forget(std::mem::take(&mut *pools));
    }
    if let Some(position) = pools.iter().position(|(_, size, _)| *size == threads) {
        let entry = pools.remove(position);
        let pool = Arc::clone(&entry.2);
        pools.push(entry);
        return Ok(pool);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|index| format!("gkfda-{index}"))
        .build()
        .map_err(|e| {
            Error::invalid(
                "n_jobs",
                format!("could not start {n_threads} threads: {e}"),
            )
        })?;
    let pool = Arc::new(pool);
    if pools.len() >= KEPT_POOLS {
        pools.remove(0);
    }
    pools.push((process, threads, Arc::clone(&pool)));
    Ok(pool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pool_per_thread_count_is_made_once_and_shared() {
        let (a, b) = (shared(3).unwrap(), shared(3).unwrap());
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a.current_num_threads(), 3);
        assert_eq!(shared(0).unwrap().current_num_threads(), 1);
        assert!(!Arc::ptr_eq(&a, &shared(2).unwrap()));
    }

    #[test]
    fn at_most_a_few_pools_are_kept() {
        for threads in 1..=3 * KEPT_POOLS {
            shared(threads).unwrap();
        }
        let pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(pools.len() <= KEPT_POOLS);
        // The most recently used are the ones kept.
        assert!(pools.iter().any(|(_, size, _)| *size == 3 * KEPT_POOLS));
    }
}
