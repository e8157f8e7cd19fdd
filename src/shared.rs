//! Passes over one kernel shared by selections that run side by side.
//!
//! A one-vs-rest fit of `C` classes makes `C` selections over the same training kernel.
//! Run one after the other, each pick (of the schur family, or of the others at stages 1)
//! streams half of `K` from memory, once per selection. Run side by side, in lock step,
//! the `C` selections' passes become one pass with all their right-hand sides: `K` is read
//! once for all of them, and a pass with a handful of right-hand sides costs little more
//! than a plain read (`examples/pass_speed`).
//! Each selection runs on a thread of its own and hands its right-hand sides to
//! [`SharedPasses::multiply`], which waits; once every selection still running waits,
//! the thread that called [`SharedPasses::serve`] makes the pass and hands each its
//! products. Each product is one running sum over its row in ascending order
//! ([`passes::multiply_in_order`]), so a selection gets the same values whichever others
//! share its passes, whatever the thread count.

use crate::passes::{self, Workspace};
use crate::real::Real;
use rayon::ThreadPool;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

/// The passes of a group of selections ("members") over one kernel.
pub(crate) struct SharedPasses<'k, F: Real> {
    kernel: &'k [F],
    m: usize,
    pool: Arc<ThreadPool>,
    state: Mutex<State<F>>,
    /// Signalled whenever a member asks for a pass or leaves, and when products are ready.
    changed: Condvar,
}

struct State<F> {
    /// Members whose selection is not over.
    running: usize,
    /// The right-hand sides of the members waiting for the next pass, by member.
    requests: Vec<(usize, Vec<Vec<F>>)>,
    /// Each member's products, until it takes them.
    products: Vec<Option<Vec<Vec<F>>>>,
    /// The serving thread unwound (a panic): no pass will come.
    abandoned: bool,
}

impl<'k, F: Real> SharedPasses<'k, F> {
    /// Passes over the row-major `m×m` `kernel` for `members` selections, on `pool`.
    pub(crate) fn new(kernel: &'k [F], m: usize, pool: Arc<ThreadPool>, members: usize) -> Self {
        SharedPasses {
            kernel,
            m,
            pool,
            state: Mutex::new(State {
                running: members,
                requests: Vec::new(),
                products: vec![None; members],
                abandoned: false,
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<F>> {
        // Nothing here leaves the state half-changed, so a member's panic does not poison it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'g>(&self, guard: MutexGuard<'g, State<F>>) -> MutexGuard<'g, State<F>> {
        self.changed
            .wait(guard)
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// `K x` for each `x` of `rhs`, for member `member`, from the next shared pass.
    ///
    /// # Panics
    /// If the serving thread panicked, so that no pass will come.
    pub(crate) fn multiply(&self, member: usize, rhs: &[&[F]]) -> Vec<Vec<F>> {
        let mut state = self.lock();
        state
            .requests
            .push((member, rhs.iter().map(|x| x.to_vec()).collect()));
        self.changed.notify_all();
        loop {
            if let Some(products) = state.products[member].take() {
                return products;
            }
            assert!(!state.abandoned, "the shared pass over the kernel failed");
            state = self.wait(state);
        }
    }

    /// A membership, whose end (its drop, on any return or unwind) tells the others that
    /// this member makes no more passes.
    pub(crate) fn member(&self) -> Membership<'_, 'k, F> {
        Membership(self)
    }

    /// Makes the members' passes, until every member has left: whenever every running
    /// member waits for one, one pass over `K` with all their right-hand sides (in member
    /// order).
    pub(crate) fn serve(&self) {
        let abandon = Abandon(self);
        let mut workspace = Workspace::default();
        let mut state = self.lock();
        while state.running > 0 {
            // A running member has at most one request: it waits for its products.
            if state.requests.is_empty() || state.requests.len() < state.running {
                state = self.wait(state);
                continue;
            }
            let mut requests = std::mem::take(&mut state.requests);
            drop(state);
            requests.sort_by_key(|(member, _)| *member);
            let rhs: Vec<&[F]> = requests
                .iter()
                .flat_map(|(_, xs)| xs.iter().map(Vec::as_slice))
                .collect();
            let products =
                passes::multiply_in_order(&self.pool, self.kernel, self.m, &rhs, &mut workspace);
            let mut products = products.into_iter();
            state = self.lock();
            for (member, xs) in &requests {
                state.products[*member] = Some(products.by_ref().take(xs.len()).collect());
            }
            self.changed.notify_all();
        }
        drop(state);
        std::mem::forget(abandon);
    }
}

/// See [`SharedPasses::member`].
pub(crate) struct Membership<'s, 'k, F: Real>(&'s SharedPasses<'k, F>);

impl<F: Real> Drop for Membership<'_, '_, F> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.running -= 1;
        self.0.changed.notify_all();
    }
}

/// Dropped only when [`SharedPasses::serve`] unwinds: wakes the waiting members, which
/// then panic rather than wait for ever (and the scope that joins them, with them).
struct Abandon<'s, 'k, F: Real>(&'s SharedPasses<'k, F>);

impl<F: Real> Drop for Abandon<'_, '_, F> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.abandoned = true;
        self.0.changed.notify_all();
    }
}
