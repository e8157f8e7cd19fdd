//! `select` and `select_many` on small kernels, in `f32` and `f64`: any kernel (NaN, ±∞,
//! huge, subnormal, asymmetric, not square, in any layout), any labels and any
//! `GreedyParams`. They must return `Ok` or `Err`, never panic; an `Ok` selection holds
//! distinct indices below `m`, `k` of them unless it stopped early, and does not depend
//! on the thread count nor on being one of several problems.
#![no_main]

use arbitrary::{Result, Unstructured};
use gkfda::{selection, Criterion, Deflation, GreedyParams, Real, Selection};
use gkfda_fuzz::{kernel_values, one_in, real, Laid, Layout};
use libfuzzer_sys::fuzz_target;
use ndarray::ArrayView2;

fuzz_target!(|data: &[u8]| {
    // Running out of bytes ends an input early; that is not a finding.
    let _ = run(&mut Unstructured::new(data));
});

struct Problem {
    labels: Vec<bool>,
    params: GreedyParams,
}

fn run(u: &mut Unstructured) -> Result<()> {
    let m = u.int_in_range(0..=40)?;
    // A strided kernel is refused: rarely, so that most inputs reach the engine.
    let layout = match u.int_in_range(0u8..=15)? {
        0..=7 => Layout::RowMajor,
        8..=14 => Layout::ColumnMajor,
        _ => Layout::Strided,
    };
    // `select_many` wants one thread count for all its problems: mostly they have it.
    let n_threads = threads(u)?;
    let mut problems = Vec::new();
    for _ in 0..u.int_in_range(1..=4)? {
        let n_threads = if one_in(u, 16)? {
            threads(u)?
        } else {
            n_threads
        };
        problems.push(problem(u, m, n_threads)?);
    }
    // The kernel last: its m² values may use up the input, and an input that runs out
    // reads as zeros, which should not decide the labels and parameters.
    let values = kernel_values(u, m)?;
    names(u)?;
    if u.arbitrary()? {
        check(Laid::<f32>::new(&values, layout).view(), &problems);
    } else {
        check(Laid::<f64>::new(&values, layout).view(), &problems);
    }
    Ok(())
}

fn threads(u: &mut Unstructured) -> Result<usize> {
    if one_in(u, 16)? {
        Ok(0)
    } else {
        u.int_in_range(1..=4)
    }
}

/// Labels and parameters for a selection among `m`: each field now and then out of range
/// (about one in 16 to 32 for each), so that most problems pass the checks.
fn problem(u: &mut Unstructured, m: usize, n_threads: usize) -> Result<Problem> {
    let labels_len = match u.int_in_range(0u8..=63)? {
        62 => m + 1,
        63 => m.saturating_sub(1),
        _ => m,
    };
    let labels = match u.int_in_range(0u8..=2)? {
        0 => {
            let period = u.int_in_range(1..=4)?;
            (0..labels_len).map(|i| i % (2 * period) < period).collect()
        }
        // The classes contiguous, as `GreedyKFDA.fit` orders them (both present: the
        // arbitrary labels below reach one class often enough).
        1 => {
            let negatives = u.int_in_range(1..=labels_len.saturating_sub(1).max(1))?;
            (0..labels_len).map(|i| i >= negatives).collect()
        }
        _ => (0..labels_len)
            .map(|_| u.arbitrary())
            .collect::<Result<_>>()?,
    };
    let k = match u.int_in_range(0u8..=63)? {
        61 => u.arbitrary()?,
        62 => 0,
        63 => m + 1,
        _ => u.int_in_range(1..=m.max(1))?,
    };
    let criterion = u.choose(&Criterion::ALL)?.0;
    let deflation = u.choose(&Deflation::ALL)?.0;
    let stages = match u.int_in_range(0u8..=63)? {
        0..=45 => u.int_in_range(1..=4)?,
        46..=61 => u.int_in_range(1..=m + 1)?,
        62 => 0,
        _ => u.arbitrary()?,
    };
    let seed = u.arbitrary()?;
    // Mostly none for the other criteria, which refuse one.
    let random_order = if criterion == Criterion::Random || one_in(u, 32)? {
        order(u, m, seed)?
    } else {
        None
    };
    let tol = match u.int_in_range(0u8..=15)? {
        13 | 14 => Some(10f64.powi(-u.int_in_range(0..=16)?)),
        15 => Some(real(u)?),
        _ => None,
    };
    let params = GreedyParams {
        k,
        criterion,
        deflation,
        stages,
        random_order,
        seed,
        tol,
        n_threads,
    };
    Ok(Problem { labels, params })
}

/// A priority order for the random criterion: none, `random_order`'s permutation, one
/// with a repeat or an index out of range, or one of the wrong length.
fn order(u: &mut Unstructured, m: usize, seed: u64) -> Result<Option<Vec<usize>>> {
    let mut order = selection::random_order(m, seed);
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert!(
        sorted.iter().copied().eq(0..m),
        "random_order({m}, {seed}) is not a permutation"
    );
    match u.int_in_range(0u8..=7)? {
        0..=2 => return Ok(None),
        3..=5 => {}
        6 if m > 0 => {
            let i = u.choose_index(m)?;
            order[i] = if u.arbitrary()? {
                order[(i + 1) % m]
            } else {
                m + u.int_in_range(0..=usize::MAX - m)?
            };
        }
        _ => {
            if u.arbitrary()? {
                order.push(m);
            } else {
                order.pop();
            }
        }
    }
    Ok(Some(order))
}

/// The criterion and deflation names: any string parses to the value it names or to an
/// error, and a value prints as the name it parses from.
fn names(u: &mut Unstructured) -> Result<()> {
    let name: String = u.arbitrary()?;
    if let Ok(criterion) = name.parse::<Criterion>() {
        assert_eq!(criterion.to_string(), name);
    }
    if let Ok(deflation) = name.parse::<Deflation>() {
        assert_eq!(deflation.to_string(), name);
    }
    Ok(())
}

fn check<F: Real>(kernel: ArrayView2<F>, problems: &[Problem]) {
    let m = kernel.nrows();
    let mut alone = Vec::with_capacity(problems.len());
    for Problem { labels, params } in problems {
        let outcome = selection::select(kernel, labels, params);
        if let Ok(selection) = &outcome {
            holds(selection, m, params.k);
            if params.n_threads > 1 {
                let one_thread = GreedyParams {
                    n_threads: 1,
                    ..params.clone()
                };
                let again = selection::select(kernel, labels, &one_thread);
                assert_eq!(again.as_ref(), Ok(selection), "depends on the thread count");
            }
        }
        alone.push(outcome);
    }
    let many: Vec<(&[bool], GreedyParams)> = problems
        .iter()
        .map(|p| (p.labels.as_slice(), p.params.clone()))
        .collect();
    match selection::select_many(kernel, &many) {
        // Kernels this small never share passes: each problem runs as `select` would.
        Ok(selections) => {
            assert_eq!(selections.len(), problems.len());
            for (shared, alone) in selections.iter().zip(&alone) {
                assert_eq!(
                    Ok(shared),
                    alone.as_ref(),
                    "select_many differs from select"
                );
            }
        }
        Err(_) => {
            let threads_differ = problems
                .iter()
                .any(|p| p.params.n_threads != problems[0].params.n_threads);
            assert!(
                threads_differ || alone.iter().any(Result::is_err),
                "select_many failed where every select succeeded"
            );
        }
    }
    assert_eq!(selection::select_many(kernel, &[]), Ok(Vec::new()));
}

/// The invariants of an `Ok` selection of up to `k` bases among `m`.
fn holds(selection: &Selection, m: usize, k: usize) {
    let indices = &selection.indices;
    assert!(
        indices.iter().all(|&i| i < m),
        "index out of range: {indices:?}, m = {m}"
    );
    let mut sorted = indices.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), indices.len(), "repeated index: {indices:?}");
    if selection.stopped_early {
        assert!(
            indices.len() < k,
            "stopped early with {} of k = {k}",
            indices.len()
        );
    } else {
        assert_eq!(indices.len(), k, "stopped short of k without saying so");
    }
}
