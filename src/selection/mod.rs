//! The greedy basis selection of Diethe (2015), Algorithm 1, in O(m²) per pick.
//!
//! The deflated kernel is never written: `K_t = K_0 − Σ_r u_r v_r'` is held as its
//! rank-one terms, and the per-column statistics (the class sums `s_c = K_t'1_c`, one per
//! class, and `d_i = Σ_j D_j (K_t)_ji²`; docs/architecture.md, "Per-column statistics") are
//! updated in O(mC) per pick from products with `K_0`, for `C ≥ 2` classes sharing one
//! basis (two classes: `p = K_t'1₊`, `n = K_t'1₋`):
//!
//! | deflation   | `u`              | `v`      | reads of `K_0` per pick |
//! |-------------|------------------|----------|-------------------------|
//! | hotelling   | `(x'K_t x) x`    | `x`      | one (`[x, Dx]`)         |
//! | projection  | `x`              | `K_t'x`  | one (`[x, Dx]`)         |
//! | schur       | `K_t x/(x'K_t x)`| `K_t'x`  | two (`x`, then `Du`), one when `x` came ahead with the last `Du`; `S+1` per stage; one for `pseudo` and `random` |
//!
//! with `x = τ = c_i/‖c_i‖`, or for the `ortho-*` forms `τ` Gram–Schmidt-orthogonalised
//! against the earlier directions. For the hotelling and projection families a stage of
//! `S` picks costs one read of `K_0` with `2S` right-hand sides: every direction of the
//! stage is a combination of the stage-start columns (and earlier directions, whose
//! products are kept), so each vector carries its products with `K_0` along
//! (`Tracked`). Schur's `u = K_t x/λ` leaves that span, so its picks stay sequential.
//! Its second read, `h = K_t'Du`, serves only `d`, which only ranks candidates: for the
//! criteria that need `d` just to skip numerically explained columns (`pseudo`, `random`)
//! the schur family keeps no `d` and checks the best-ranked candidates' own columns
//! instead, one read a pick. The other criteria's `h` pass also multiplies the likeliest
//! next pick (`Engine::finish_with_candidates`), whose direction needs no `h`.
//! A read with up to four right-hand sides touches only the upper triangle of the
//! symmetric `K_0` ([`crate::passes::multiply_groups`]). With the classes contiguous (as
//! `GreedyKFDA.fit` orders them) each pass splits by class, and a wide pass also reads
//! the earlier terms as extra rows, for the stage's products with them
//! ([`crate::passes::multiply_groups_with_rows`]). Several problems over one kernel (one-vs-rest)
//! can share their narrow passes: [`select_many`].

mod criteria;
mod engine;
mod pspace;
mod rows;
mod schur;
mod shared;
mod stages;
#[cfg(test)]
mod tests;

use crate::error::{check_stop, try_zeroed, Error, Result};
use crate::operator::KernelOperator;
pub use crate::params::{Criterion, Deflation, GreedyParams};
use crate::params::{Directions, Family, ValidParams};
use crate::progress::Progress;
use crate::real::Real;
use crate::tuning::{SHARED_FROM_BYTES, SHARED_SELECTIONS, SPECULATED_CANDIDATES};
use engine::Engine;
use ndarray::ArrayView2;
pub use pspace::FactorRows;
pub use rows::{Candidate, Moments, RowParts, RowStatistics, RowTerm, RowsSetUp};
use schur::{FirstPick, Speculated};
use shared::SharedPasses;
use std::sync::atomic::AtomicBool;

/// The outcome of a selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Chosen training indices, in selection order.
    pub indices: Vec<usize>,
    /// True when no admissible candidate was left before `k` bases were chosen.
    pub stopped_early: bool,
    /// Full reads of the kernel made (the statistics' initial pass included).
    pub kernel_passes: usize,
}

/// A permutation of `0..m` from a seed (SplitMix64 driving a Fisher–Yates shuffle), for
/// Rust callers of the `random` criterion; the Python layer passes NumPy's instead.
pub fn random_order(m: usize, seed: u64) -> Vec<usize> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut order: Vec<usize> = (0..m).collect();
    for i in (1..m).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// Chooses up to `params.k` bases from the symmetric training kernel `kernel` (row- or
/// column-major, borrowed, never written) for labels `positive` (`true` = class +1): the
/// two-class problem of [`select_classes`], `true` as class code 1 and `false` as 0.
pub fn select<F: Real>(
    kernel: ArrayView2<F>,
    positive: &[bool],
    params: &GreedyParams,
) -> Result<Selection> {
    select_with_stop(kernel, positive, params, &AtomicBool::new(false))
}

/// [`select`], which gives up with [`Error::Interrupted`] once `stop` is raised (from
/// another thread): it looks at the flag before each stage and, in the schur family,
/// before each pick, so it answers within one or two passes over the kernel. The
/// bindings raise it when Python's signal handlers raise (Ctrl-C).
pub fn select_with_stop<F: Real>(
    kernel: ArrayView2<F>,
    positive: &[bool],
    params: &GreedyParams,
    stop: &AtomicBool,
) -> Result<Selection> {
    select_classes_with_stop(kernel, &class_codes(positive), params, stop)
}

/// Chooses up to `params.k` bases from the symmetric training kernel `kernel` (row- or
/// column-major, borrowed, never written) for the classes `classes`: sample `j` is of class
/// `classes[j]`, the codes run from 0 to `C − 1` with every class present, `C ≥ 2`. Every
/// class shares one basis: the score of a column is the Fisher criterion of its class
/// sums against its within-class scatter, weighted by class (docs/architecture.md,
/// "Per-column statistics"). Two classes are [`select`]'s problem, code 1 its `true`.
pub fn select_classes<F: Real>(
    kernel: ArrayView2<F>,
    classes: &[u32],
    params: &GreedyParams,
) -> Result<Selection> {
    select_classes_with_stop(kernel, classes, params, &AtomicBool::new(false))
}

/// [`select_classes`], which gives up with [`Error::Interrupted`] once `stop` is raised, as
/// [`select_with_stop`] does.
pub fn select_classes_with_stop<F: Real>(
    kernel: ArrayView2<F>,
    classes: &[u32],
    params: &GreedyParams,
    stop: &AtomicBool,
) -> Result<Selection> {
    let operator = KernelOperator::dense_of(&kernel, "K")?;
    select_classes_on(operator, classes, params, stop)
}

/// [`select_classes_with_stop`] over any kernel operator: the dense kernel, or a factor
/// `K_0 = ΦΦ'` ([`KernelOperator::factored_of`]), on which every criterion, deflation and
/// stage count picks as on the explicit `ΦΦ'` (up to the roundings of its other products),
/// at O(mp) a product instead of O(m²).
pub fn select_classes_on<F: Real>(
    kernel: KernelOperator<'_, F>,
    classes: &[u32],
    params: &GreedyParams,
    stop: &AtomicBool,
) -> Result<Selection> {
    select_classes_with_progress(kernel, classes, params, stop, &Progress::new())
}

/// [`select_classes_on`], which counts its picks in `progress` (`min(k, m)` to do, one
/// done a pick, a stage's at its end) for a caller on another thread to read.
pub fn select_classes_with_progress<F: Real>(
    kernel: KernelOperator<'_, F>,
    classes: &[u32],
    params: &GreedyParams,
    stop: &AtomicBool,
    progress: &Progress,
) -> Result<Selection> {
    let form = FactoredForm::Auto;
    select_classes_in_form(kernel, classes, params, stop, progress, form)
}

/// How a selection over a factor `K_0 = ΦΦ'` in memory keeps its deflation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FactoredForm {
    /// In the factor's coordinates where its `p×p` matrices are affordable, else as terms.
    #[default]
    Auto,
    /// In the factor's coordinates, `K_t = Φ S_t Φ'`: one pass over `Φ` a stage.
    Coordinates,
    /// As rank-one terms of `m`-vectors, `K_t = ΦΦ' − UV'`, as over a dense kernel.
    Terms,
}

/// [`select_classes_with_progress`] with the factored form chosen (`form` is ignored for a
/// dense kernel and a factor held elsewhere).
pub fn select_classes_in_form<F: Real>(
    kernel: KernelOperator<'_, F>,
    classes: &[u32],
    params: &GreedyParams,
    stop: &AtomicBool,
    progress: &Progress,
    form: FactoredForm,
) -> Result<Selection> {
    let m = kernel.m();
    let params = params.check::<F>((m, m), classes)?;
    progress.add_total(params.k.min(m));
    select_alone_in_form(kernel, classes, &params, stop, progress, form)
}

/// The selection over the rows of a factor held by `rows` ([`FactorRows`]: in memory, or
/// chunk by chunk elsewhere), in the factor's coordinates, for the classes `classes` (as
/// [`select_classes`]): one round over the rows a stage.
pub fn select_classes_over_rows<F: Real>(
    rows: &mut dyn FactorRows<F>,
    classes: &[u32],
    params: &GreedyParams,
    stop: &AtomicBool,
    progress: &Progress,
) -> Result<Selection> {
    let m = rows.rows_count();
    let params = params.check::<F>((m, m), classes)?;
    progress.add_total(params.k.min(m));
    pspace::select(rows, classes, &params, stop, progress)
}

/// Whether the selection of `params` over `kernel` runs in the factor's coordinates.
fn in_coordinates<F: Real>(
    kernel: KernelOperator<'_, F>,
    params: &ValidParams,
    form: FactoredForm,
) -> bool {
    match (kernel, form) {
        (KernelOperator::Factored { .. }, FactoredForm::Coordinates) => true,
        (KernelOperator::Factored { m, p, .. }, FactoredForm::Auto) => {
            pspace::suits::<F>(m, p, params)
        }
        _ => false,
    }
}

/// For the `random` criterion, each sample's place in the random order (the order given,
/// else drawn from the seed); empty for the other criteria.
fn random_ranks(params: &ValidParams, m: usize) -> Result<Vec<usize>> {
    if params.criterion != Criterion::Random {
        return Ok(Vec::new());
    }
    let order = params
        .random_order
        .clone()
        .unwrap_or_else(|| random_order(m, params.seed));
    let mut rank = try_zeroed::<usize>(m, "the random order")?;
    for (position, &i) in order.iter().enumerate() {
        rank[i] = position;
    }
    Ok(rank)
}

/// Two-class labels as class codes: `true` 1, `false` 0.
fn class_codes(positive: &[bool]) -> Vec<u32> {
    positive.iter().map(|&p| u32::from(p)).collect()
}

/// The selection of a checked problem over `kernel`, with passes of its own.
fn select_alone<F: Real>(
    kernel: KernelOperator<'_, F>,
    classes: &[u32],
    params: &ValidParams,
    stop: &AtomicBool,
    progress: &Progress,
) -> Result<Selection> {
    select_alone_in_form(kernel, classes, params, stop, progress, FactoredForm::Auto)
}

/// [`select_alone`] in the factored form `form`.
fn select_alone_in_form<F: Real>(
    kernel: KernelOperator<'_, F>,
    classes: &[u32],
    params: &ValidParams,
    stop: &AtomicBool,
    progress: &Progress,
    form: FactoredForm,
) -> Result<Selection> {
    if let KernelOperator::Factored { factor, p, .. } = kernel {
        if in_coordinates(kernel, params, form) {
            let mut rows = pspace::RowsInMemory::new(factor, p, params.n_threads)?;
            return pspace::select(&mut rows, classes, params, stop, progress);
        }
    }
    let mut engine = Engine::new(kernel, classes, params.tol, params.n_threads, stop)?;
    // The whole loop runs on a worker of the engine's pool, so that a pass is shared by
    // that worker and the others (n threads in all), where a caller outside the pool
    // would wake n workers for each pass and wait: fewer wake-ups per pick, and no
    // (n + 1)-th thread on n cores.
    let pool = std::sync::Arc::clone(&engine.pool);
    pool.install(|| run_selection(&mut engine, params, stop, progress))
}

/// [`select`] for several problems over one kernel, `problems[c] = (positive, params)`
/// (the one-vs-rest problems of a multiclass fit), which give the same [`Selection`]s
/// whatever their number or order. Problems whose picks read `K` one at a time (the
/// schur family at any stage, the hotelling and projection families at stages 1) over a
/// kernel of 12 MiB or more run side by side in groups of up to 12 that share each pass
/// over `K`: `C` picks for one read of `K` where one after the other they would read it
/// `C` times. Their passes read all of `K` in a fixed order
/// ([`crate::passes::multiply_in_order`]), where [`select`]'s narrow passes read its upper
/// triangle (split by class), so their sums, and on close calls their picks, can differ
/// from [`select`]'s in the last bits. A group's terms take at most as much memory as the
/// kernel. The others run one after the other, as [`select`]. All problems need the same
/// `n_threads`; each [`Selection::kernel_passes`] counts the passes it took part in.
pub fn select_many<F: Real>(
    kernel: ArrayView2<F>,
    problems: &[(&[bool], GreedyParams)],
) -> Result<Vec<Selection>> {
    select_many_with_stop(kernel, problems, &AtomicBool::new(false))
}

/// [`select_many`], which gives up with [`Error::Interrupted`] once `stop` is raised.
pub fn select_many_with_stop<F: Real>(
    kernel: ArrayView2<F>,
    problems: &[(&[bool], GreedyParams)],
    stop: &AtomicBool,
) -> Result<Vec<Selection>> {
    // No problems, no selections: whatever the kernel, as over an operator.
    if problems.is_empty() {
        return Ok(Vec::new());
    }
    let operator = KernelOperator::dense_of(&kernel, "K")?;
    select_many_on(operator, problems, stop)
}

/// [`select_many_with_stop`] over any kernel operator ([`select_classes_on`]).
pub fn select_many_on<F: Real>(
    kernel: KernelOperator<'_, F>,
    problems: &[(&[bool], GreedyParams)],
    stop: &AtomicBool,
) -> Result<Vec<Selection>> {
    select_many_with_progress(kernel, problems, stop, &Progress::new())
}

/// [`select_many_on`], which counts the picks of every problem in `progress`
/// ([`select_classes_with_progress`]).
pub fn select_many_with_progress<F: Real>(
    kernel: KernelOperator<'_, F>,
    problems: &[(&[bool], GreedyParams)],
    stop: &AtomicBool,
    progress: &Progress,
) -> Result<Vec<Selection>> {
    select_many_sharing_from(kernel, problems, stop, progress, SHARED_FROM_BYTES)
}

/// [`select_many_with_progress`], sharing passes over kernels of `shared_from_bytes` or
/// more.
fn select_many_sharing_from<F: Real>(
    kernel: KernelOperator<'_, F>,
    problems: &[(&[bool], GreedyParams)],
    stop: &AtomicBool,
    progress: &Progress,
    shared_from_bytes: usize,
) -> Result<Vec<Selection>> {
    let Some((_, first)) = problems.first() else {
        return Ok(Vec::new());
    };
    let m = kernel.m();
    let mut checked: Vec<(Vec<u32>, ValidParams)> = Vec::with_capacity(problems.len());
    for (c, (positive, params)) in problems.iter().enumerate() {
        let classes = class_codes(positive);
        let valid = params
            .check::<F>((m, m), &classes)
            .map_err(|error| error.in_problem(c))?;
        checked.push((classes, valid));
        if params.n_threads != first.n_threads {
            return Err(Error::invalid(
                "n_jobs",
                "must be the same for every problem of a shared selection",
            ));
        }
    }
    let bytes = kernel.bytes();
    let problems = checked;
    progress.add_total(problems.iter().map(|(_, params)| params.k.min(m)).sum());
    let sharing = |params: &ValidParams| {
        shares_passes(params)
            && bytes >= shared_from_bytes
            && !in_coordinates(kernel, params, FactoredForm::Auto)
    };
    let mut selections: Vec<Option<Selection>> = vec![None; problems.len()];
    for (c, (classes, params)) in problems.iter().enumerate() {
        if !sharing(params) {
            selections[c] = Some(select_alone(kernel, classes, params, stop, progress)?);
        }
    }
    let shared: Vec<usize> = (0..problems.len())
        .filter(|&c| sharing(&problems[c].1))
        .collect();
    // Side by side, the selections hold their terms at once, `2·m·k` values each (`3·m·k`
    // with the ortho forms' directions), where one after the other they take turns: a
    // group's terms take at most as much memory as the kernel (and 12 selections at most).
    let terms = |params: &ValidParams| {
        let vectors = match params.directions {
            Directions::Orthogonalised => 3,
            Directions::Normalised => 2,
        };
        (vectors * params.k).saturating_mul(m * std::mem::size_of::<F>())
    };
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut group_bytes = 0usize;
    for &c in &shared {
        let bytes_c = terms(&problems[c].1);
        match groups.last_mut() {
            Some(group)
                if group.len() < SHARED_SELECTIONS
                    && group_bytes.saturating_add(bytes_c) <= bytes =>
            {
                group.push(c);
                group_bytes += bytes_c;
            }
            _ => {
                groups.push(vec![c]);
                group_bytes = bytes_c;
            }
        }
    }
    for group in groups {
        let members: Vec<&(Vec<u32>, ValidParams)> = group.iter().map(|&c| &problems[c]).collect();
        let outcomes = select_side_by_side(kernel, &members, stop, progress)?;
        for (&c, selection) in group.iter().zip(outcomes) {
            selections[c] = Some(selection);
        }
    }
    Ok(selections.into_iter().flatten().collect())
}

/// Whether a selection's passes are worth sharing: those bound by memory, schur's (one or
/// two vectors at any stage) and the other families' at a stage of one. Their wider
/// stages' passes are bound by arithmetic, which a shared pass would not lessen (and
/// without the split by class, would double).
fn shares_passes(params: &ValidParams) -> bool {
    match params.family {
        Family::Schur => true,
        Family::Hotelling | Family::Projection => params.stages == 1,
        Family::None => false,
    }
}

/// The selections of `problems` (checked), each on a thread of its own, sharing their
/// passes over `kernel`, served from this thread (or, from a rayon
/// worker, from a thread of its own, so that the worker cannot take up other jobs of its
/// pool while it waits, one of which might wait on it).
fn select_side_by_side<F: Real>(
    kernel: KernelOperator<'_, F>,
    problems: &[&(Vec<u32>, ValidParams)],
    stop: &AtomicBool,
    progress: &Progress,
) -> Result<Vec<Selection>> {
    let pool = crate::pool::shared(problems[0].1.n_threads)?;
    let shared = SharedPasses::new(kernel, pool, problems.len());
    let joined = std::thread::scope(|scope| {
        // Armed before the first member starts: should this thread unwind before serving
        // every pass, the members waiting for one panic instead of waiting for ever.
        let abandon = shared.abandon_on_unwind();
        let mut members = Vec::with_capacity(problems.len());
        for (member, &(classes, params)) in problems.iter().enumerate() {
            // Made before the spawn, so that a thread that cannot start still leaves (its
            // closure, holding the membership, is dropped).
            let membership = shared.member(member);
            let shared = &shared;
            let started = std::thread::Builder::new()
                .name(format!("gkfda-selection-{member}"))
                .spawn_scoped(scope, move || {
                    let _membership = membership;
                    shared.take_turn(member);
                    let halt = shared.halt_flag();
                    let outcome = Engine::new(kernel, classes, params.tol, params.n_threads, halt)
                        .and_then(|mut engine| {
                            engine.share_passes(shared, member);
                            run_selection(&mut engine, params, halt, progress)
                        });
                    if outcome.is_err() {
                        shared.halt(); // the call fails: the others' work would be lost
                    }
                    outcome
                });
            members.push(started.ok());
        }
        if rayon::current_thread_index().is_some() {
            let served = scope.spawn(|| shared.serve(stop)).join();
            served.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        } else {
            shared.serve(stop);
        }
        abandon.disarm();
        members
            .into_iter()
            .map(|thread| thread.map(|thread| thread.join()))
            .collect::<Vec<_>>()
    });
    // A panic first, then an error of a member's own, then a stop (which a failed member
    // asked of the others).
    let mut outcomes = Vec::with_capacity(joined.len());
    for joined in joined {
        match joined {
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            Some(Ok(outcome)) => outcomes.push(Some(outcome)),
            None => outcomes.push(None),
        }
    }
    if let Some(error) = outcomes.iter().flatten().find_map(|outcome| {
        outcome
            .as_ref()
            .err()
            .filter(|error| **error != Error::Interrupted)
    }) {
        return Err(error.clone());
    }
    let mut selections = Vec::with_capacity(outcomes.len());
    for (outcome, &(classes, params)) in outcomes.into_iter().zip(problems) {
        selections.push(match outcome {
            Some(outcome) => outcome?,
            // The OS would not start its thread: alone, with passes of its own.
            None => select_alone(kernel, classes, params, stop, progress)?,
        });
    }
    Ok(selections)
}

/// The picks of `engine` (just made) for `params`.
fn run_selection<F: Real>(
    engine: &mut Engine<'_, F>,
    params: &ValidParams,
    stop: &AtomicBool,
    progress: &Progress,
) -> Result<Selection> {
    let tol = params.tol;
    let m = engine.m;
    engine.reserve_terms(params.k.min(m), params.vectors_per_term())?;
    let rank = random_ranks(params, m)?;
    engine.target = params.k;
    let (family, directions) = (params.family, params.directions);
    // The schur family's two passes a pick are `K_t x` and `h = K_t'Du`, and `h` serves
    // only `d`: criteria that rank without `d` check their candidates' own columns instead
    // and take one pass a pick.
    engine.tracks_d = !(family == Family::Schur && params.criterion.checks_candidates_one_by_one());
    // Schur picks that keep `d` multiply the next pick's likely candidates with their `h`
    // (not beside other selections: shared passes take each member's own widths).
    let speculate = family == Family::Schur && engine.tracks_d && engine.shared.is_none();
    let mut speculated: Vec<Speculated<F>> = Vec::new();
    let mut blocked = vec![false; m];
    let mut chosen = Vec::with_capacity(params.k);
    let mut stopped_early = false;
    while chosen.len() < params.k {
        check_stop(stop)?;
        let take = params.stages.min(params.k - chosen.len());
        let (picks, first_column) = if engine.tracks_d {
            let picks = engine.ranked_candidates(params.criterion, &blocked, &rank, take);
            (picks, None)
        } else {
            engine.admissible_candidates(params.criterion, &blocked, &rank, take)
        };
        let first_column = first_column.map(FirstPick::Column);
        if picks.is_empty() {
            stopped_early = true;
            break;
        }
        let picks = picks.as_slice();
        for &i in picks {
            blocked[i] = true;
        }
        let before = chosen.len();
        match family {
            Family::None => chosen.extend_from_slice(picks),
            Family::Hotelling | Family::Projection => engine.fused_stage(
                picks,
                family,
                directions,
                params.stages == 1,
                tol,
                &mut chosen,
            ),
            Family::Schur => {
                let first = std::mem::take(&mut speculated)
                    .into_iter()
                    .find(|candidate| candidate.index == picks[0])
                    .map(|Speculated { x, v, .. }| FirstPick::Product { x, v })
                    .or(first_column);
                let deferred = engine.schur_stage(picks, first, directions, tol, &mut chosen, stop);
                if let Some(du) = deferred {
                    let candidates = if speculate {
                        let take = SPECULATED_CANDIDATES;
                        engine.ranked_candidates(params.criterion, &blocked, &rank, take)
                    } else {
                        Vec::new()
                    };
                    speculated = engine.finish_with_candidates(&du, &candidates, directions, tol);
                }
            }
        }
        progress.advance(chosen.len() - before);
    }
    Ok(Selection {
        indices: chosen,
        stopped_early,
        kernel_passes: engine.passes,
    })
}
