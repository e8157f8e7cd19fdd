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
//! ([`crate::passes::multiply_in_order`]; a factored product is one such already), so a selection gets the same values whichever others
//! share its passes, whatever the thread count. Between passes, no more selections run at
//! once than the pool has threads (the others wait for a turn), so side by side they use
//! no more cores than the caller asked for (`n_jobs`).

use crate::operator::KernelOperator;
use crate::passes::Workspace;
use crate::real::Real;
use rayon::ThreadPool;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

/// The passes of a group of selections ("members") over one kernel.
pub(crate) struct SharedPasses<'k, F: Real> {
    kernel: KernelOperator<'k, F>,
    pool: Arc<ThreadPool>,
    state: Mutex<State<F>>,
    /// Signalled whenever a member asks for a pass or leaves, and when products are ready.
    changed: Condvar,
    /// The members' stop flag: raised when the caller's is, or when a member fails (its
    /// error or panic ends the call, so the others' work would be thrown away).
    halt: AtomicBool,
}

struct State<F> {
    /// Members whose selection is not over.
    running: usize,
    /// The right-hand sides of the members waiting for the next pass, by member.
    requests: Vec<(usize, Vec<Vec<F>>)>,
    /// Each member's products, until it takes them.
    products: Vec<Option<Vec<Vec<F>>>>,
    /// Turns to run free: members may work between passes only while holding one.
    turns: usize,
    /// Whether each member holds a turn.
    holding: Vec<bool>,
    /// The serving thread unwound (a panic): no pass will come.
    abandoned: bool,
}

impl<'k, F: Real> SharedPasses<'k, F> {
    /// Passes over `kernel` for `members` selections, on `pool`; as many members run at
    /// once as `pool` has threads.
    pub(crate) fn new(
        kernel: KernelOperator<'k, F>,
        pool: Arc<ThreadPool>,
        members: usize,
    ) -> Self {
        let turns = pool.current_num_threads().max(1);
        SharedPasses {
            kernel,
            pool,
            state: Mutex::new(State {
                running: members,
                requests: Vec::new(),
                products: vec![None; members],
                turns,
                holding: vec![false; members],
                abandoned: false,
            }),
            changed: Condvar::new(),
            halt: AtomicBool::new(false),
        }
    }

    /// The flag the members' selections stop on ([`SharedPasses::halt`]).
    pub(crate) fn halt_flag(&self) -> &AtomicBool {
        &self.halt
    }

    /// Asks every member to stop at its next check.
    pub(crate) fn halt(&self) {
        self.halt.store(true, Ordering::Relaxed);
    }

    /// A guard that, dropped, tells the members waiting for a pass that none will come, so
    /// that they panic rather than wait for ever: made before the first member starts and
    /// [disarmed](Abandon::disarm) once [`SharedPasses::serve`] has returned, it turns a
    /// panic of the serving thread in between into the members' panics.
    pub(crate) fn abandon_on_unwind(&self) -> Abandon<'_, 'k, F> {
        Abandon(self)
    }

    /// Waits for a turn of `member` to run (which it holds until it waits for a pass or
    /// leaves).
    ///
    /// # Panics
    /// If the serving thread panicked.
    pub(crate) fn take_turn(&self, member: usize) {
        let mut state = self.lock();
        while state.turns == 0 {
            assert!(!state.abandoned, "the shared pass over the kernel failed");
            state = self.wait(state);
        }
        state.turns -= 1;
        state.holding[member] = true;
    }

    /// Gives back `member`'s turn, if it holds one.
    fn give_turn(&self, state: &mut State<F>, member: usize) {
        if std::mem::replace(&mut state.holding[member], false) {
            state.turns += 1;
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

    /// `K x` for each `x` of `rhs`, for member `member`, from the next shared pass; the
    /// member's turn is given up while it waits, and taken again before this returns.
    ///
    /// # Panics
    /// If the serving thread panicked, so that no pass will come.
    pub(crate) fn multiply(&self, member: usize, rhs: &[&[F]]) -> Vec<Vec<F>> {
        let mut state = self.lock();
        state
            .requests
            .push((member, rhs.iter().map(|x| x.to_vec()).collect()));
        self.give_turn(&mut state, member);
        self.changed.notify_all();
        let products = loop {
            if let Some(products) = state.products[member].take() {
                break products;
            }
            assert!(!state.abandoned, "the shared pass over the kernel failed");
            state = self.wait(state);
        };
        drop(state);
        self.take_turn(member);
        products
    }

    /// Member `member`'s membership, whose end (its drop, on any return or unwind) tells
    /// the others that it makes no more passes, and gives back its turn.
    pub(crate) fn member(&self, member: usize) -> Membership<'_, 'k, F> {
        Membership {
            shared: self,
            member,
        }
    }

    /// Makes the members' passes, until every member has left: whenever every running
    /// member waits for one, one pass over `K` with all their right-hand sides (in member
    /// order). A raised `stop` is handed on to the members ([`SharedPasses::halt`]) each
    /// time a member asks for a pass or leaves.
    pub(crate) fn serve(&self, stop: &AtomicBool) {
        let mut workspace = Workspace::default();
        let mut state = self.lock();
        while state.running > 0 {
            if stop.load(Ordering::Relaxed) {
                self.halt();
            }
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
            let products = self
                .kernel
                .multiply_in_order(&self.pool, &rhs, &mut workspace);
            let mut products = products.into_iter();
            state = self.lock();
            for (member, xs) in &requests {
                state.products[*member] = Some(products.by_ref().take(xs.len()).collect());
            }
            self.changed.notify_all();
        }
    }
}

/// See [`SharedPasses::member`].
pub(crate) struct Membership<'s, 'k, F: Real> {
    shared: &'s SharedPasses<'k, F>,
    member: usize,
}

impl<F: Real> Drop for Membership<'_, '_, F> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.shared.halt();
        }
        let mut state = self.shared.lock();
        state.running -= 1;
        self.shared.give_turn(&mut state, self.member);
        self.shared.changed.notify_all();
    }
}

/// See [`SharedPasses::abandon_on_unwind`].
pub(crate) struct Abandon<'s, 'k, F: Real>(&'s SharedPasses<'k, F>);

impl<F: Real> Abandon<'_, '_, F> {
    /// The passes were all served: nothing to tell.
    pub(crate) fn disarm(self) {
        std::mem::forget(self);
    }
}

impl<F: Real> Drop for Abandon<'_, '_, F> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.abandoned = true;
        self.0.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    fn pool(threads: usize) -> Arc<ThreadPool> {
        Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap(),
        )
    }

    /// `members` members over the `m×m` `kernel`, on a pool of `threads`, each running
    /// `body(member, shared)` once its turn comes; their passes served with a stop flag
    /// raised when `stop`, or, unless `serve`, abandoned. Their outcomes (a panic an `Err`).
    fn run_members<R: Send>(
        (kernel, m): (&[f64], usize),
        threads: usize,
        members: usize,
        (serve, stop): (bool, bool),
        body: impl Fn(usize, &SharedPasses<'_, f64>) -> R + Sync,
    ) -> Vec<std::thread::Result<R>> {
        let shared = SharedPasses::new(KernelOperator::Dense { kernel, m }, pool(threads), members);
        std::thread::scope(|scope| {
            let abandon = shared.abandon_on_unwind();
            let running: Vec<_> = (0..members)
                .map(|member| {
                    let membership = shared.member(member);
                    let (shared, body) = (&shared, &body);
                    scope.spawn(move || {
                        let _membership = membership;
                        shared.take_turn(member);
                        body(member, shared)
                    })
                })
                .collect();
            if serve {
                shared.serve(&AtomicBool::new(stop));
                abandon.disarm();
            } else {
                drop(abandon); // as when the serving thread unwinds before serving
            }
            running.into_iter().map(|member| member.join()).collect()
        })
    }

    /// Members running at once between passes, at most, for `members` members on a pool of
    /// `threads`; each checks its products against the plain sums.
    fn most_at_once(members: usize, threads: usize) -> usize {
        let m = 40;
        let kernel: Vec<f64> = (0..m * m).map(|t| ((t * 7) % 13) as f64 - 6.0).collect();
        let (running, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let outcomes = run_members(
            (&kernel, m),
            threads,
            members,
            (true, false),
            |member, shared| {
                // Members ask for different numbers of passes: they leave at different times.
                for pass in 0..3 + member % 3 {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(2));
                    running.fetch_sub(1, Ordering::SeqCst);
                    let x: Vec<f64> = (0..m).map(|i| (i + member + pass) as f64).collect();
                    let products = shared.multiply(member, &[&x]);
                    for (i, value) in products[0].iter().enumerate() {
                        let row = &kernel[i * m..(i + 1) * m];
                        let expected = row
                            .iter()
                            .zip(&x)
                            .fold(0.0, |sum, (k, x)| k.mul_add(*x, sum));
                        assert_eq!(*value, expected, "member {member}, pass {pass}, row {i}");
                    }
                }
            },
        );
        assert!(outcomes.iter().all(Result::is_ok));
        most.load(Ordering::SeqCst)
    }

    #[test]
    fn members_share_passes_and_run_no_more_at_once_than_the_pool_has_threads() {
        assert_eq!(most_at_once(5, 1), 1);
        assert!(most_at_once(5, 2) <= 2);
        assert!(most_at_once(1, 2) == 1);
    }

    /// Passes each member makes until the members' stop flag is raised (at most 1,000).
    fn passes_until_halted(member: usize, shared: &SharedPasses<'_, f64>, fails: bool) -> usize {
        let x = vec![1.0; shared.kernel.m()];
        let mut passes = 0;
        while !shared.halt_flag().load(Ordering::Relaxed) && passes < 1000 {
            assert!(!(fails && member == 1 && passes == 2), "member 1 fails");
            assert_eq!(
                shared.multiply(member, &[&x])[0],
                vec![shared.kernel.m() as f64; shared.kernel.m()]
            );
            passes += 1;
        }
        passes
    }

    #[test]
    fn a_member_that_panics_leaves_and_asks_the_others_to_stop() {
        let kernel = vec![1.0f64; 16 * 16];
        let outcomes = run_members((&kernel, 16), 2, 3, (true, false), |member, shared| {
            passes_until_halted(member, shared, true)
        });
        assert!(outcomes[1].is_err(), "member 1 panicked");
        for member in [0, 2] {
            let passes = *outcomes[member].as_ref().unwrap();
            assert!(
                (2..1000).contains(&passes),
                "member {member} stopped after {passes}"
            );
        }
    }

    #[test]
    fn a_raised_stop_reaches_the_members() {
        let kernel = vec![1.0f64; 8 * 8];
        let outcomes = run_members((&kernel, 8), 1, 2, (true, true), |member, shared| {
            passes_until_halted(member, shared, false)
        });
        for outcome in outcomes {
            let passes = outcome.unwrap();
            assert!(passes <= 1, "the stop was handed on after {passes} passes");
        }
    }

    #[test]
    fn members_waiting_for_an_abandoned_pass_panic_rather_than_hang() {
        let kernel = vec![1.0f64; 8 * 8];
        let x = vec![1.0; 8];
        let outcomes = run_members((&kernel, 8), 1, 2, (false, false), |member, shared| {
            shared.multiply(member, &[&x])
        });
        assert!(
            outcomes.iter().all(Result::is_err),
            "a member returned without a pass"
        );
    }
}
