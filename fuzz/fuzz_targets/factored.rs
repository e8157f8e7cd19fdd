//! The factored kernel operator `K_0 = ΦΦ'` as the dense one is fuzzed: `select_classes_on`
//! and `select_many_on` (two-class problems and class codes), `pursue_on` (every method)
//! and the Nyström factor builder, in `f32` and `f64`, on factors of any `m ≤ 40` rows and
//! `p ≤ 12` columns (NaN, ±∞, huge, subnormal, rank-deficient, duplicated rows, in any
//! layout), any labels and parameters, now and then with the stop flag raised. They must
//! return `Ok` or `Err`, never panic; an `Ok` selection holds distinct indices below `m`,
//! `k` of them unless it stopped early, and does not depend on the thread count nor on
//! being one of several problems; a raised stop flag gives an `Err`; an `Ok` factor has `m`
//! rows and at most one column per pool point, does not depend on the thread count, is
//! finite for points on the grid, and is accepted by the factored operator.
#![no_main]

use arbitrary::{Result, Unstructured};
use gkfda::factor::nystroem_with_stop;
use gkfda::operator::KernelOperator;
use gkfda::pursuit::{pursue_on, Method, PursuitParams};
use gkfda::selection::{select_classes_on, select_many_on};
use gkfda::{Criterion, GreedyParams, Kernel, Real};
use gkfda_fuzz::{
    factor_values, grid, holds, layout, one_in, points, problem, problems, pursuit_holds, real,
    same_bits, threads, Laid, Layout, Problem,
};
use libfuzzer_sys::fuzz_target;
use ndarray::{Array2, ArrayView2};
use std::sync::atomic::AtomicBool;

fuzz_target!(|data: &[u8]| {
    // Running out of bytes ends an input early; that is not a finding.
    let _ = run(&mut Unstructured::new(data));
});

/// Class codes of one shared-basis problem, with its parameters.
struct Codes {
    codes: Vec<u32>,
    params: GreedyParams,
}

/// A pursuit's method, as `f64` inputs narrowed with the factor.
enum Pursued {
    Matching(Vec<f64>),
    Components,
    /// A second view's factor (any width, now and then of another length) and `signed`.
    Correlation(Array2<f64>, bool),
    Fisher(Criterion, u64),
}

/// The Nyström factor's inputs: points, pool, kernel and threads.
struct Nystroem {
    x: Array2<f64>,
    layout: Layout,
    pool: Vec<usize>,
    kernel: Kernel,
    n_threads: usize,
}

struct Case {
    layout: Layout,
    problems: Vec<Problem>,
    codes: Codes,
    pursued: Pursued,
    pursuit: PursuitParams,
    nystroem: Nystroem,
    stopped: bool,
}

fn run(u: &mut Unstructured) -> Result<()> {
    let m = u.int_in_range(0..=40)?;
    let p = if one_in(u, 32)? {
        0
    } else {
        u.int_in_range(1..=12)?
    };
    let layout = layout(u)?;
    let n_threads = threads(u)?;
    let problems = problems(u, m, n_threads, 3)?;
    let codes = codes(u, m, n_threads)?;
    let pursued = pursued(u, m)?;
    let pursuit = PursuitParams {
        k: match u.int_in_range(0u8..=31)? {
            30 => 0,
            31 => m + 1,
            _ => u.int_in_range(1..=m.max(1))?,
        },
        tol: problems[0].params.tol,
        n_threads: u.int_in_range(0..=3)?,
    };
    let nystroem = nystroem(u, m)?;
    let stopped = one_in(u, 16)?;
    // The factor last: its m·p values may use up the input.
    let values = factor_values(u, m, p)?;
    let case = Case {
        layout,
        problems,
        codes,
        pursued,
        pursuit,
        nystroem,
        stopped,
    };
    if u.arbitrary()? {
        check::<f32>(&values, &case);
    } else {
        check::<f64>(&values, &case);
    }
    Ok(())
}

/// Codes of 1 to 4 classes for a shared basis, in runs or interleaved, now and then of
/// the wrong length or with a class absent.
fn codes(u: &mut Unstructured, m: usize, n_threads: usize) -> Result<Codes> {
    let n_classes = u.int_in_range(1..=4u32)?;
    let length = match u.int_in_range(0u8..=31)? {
        30 => m + 1,
        31 => m.saturating_sub(1),
        _ => m,
    };
    let codes = if u.arbitrary()? {
        (0..length)
            .map(|i| (i * n_classes as usize / length.max(1)) as u32)
            .collect()
    } else {
        (0..length)
            .map(|_| u.int_in_range(0..=n_classes - 1))
            .collect::<Result<_>>()?
    };
    let params = problem(u, m, n_threads)?.params;
    Ok(Codes { codes, params })
}

fn pursued(u: &mut Unstructured, m: usize) -> Result<Pursued> {
    let length = if one_in(u, 32)? { m + 1 } else { m };
    Ok(match u.int_in_range(0u8..=3)? {
        0 => Pursued::Matching((0..length).map(|_| real(u)).collect::<Result<_>>()?),
        1 => Pursued::Components,
        2 => {
            let p = u.int_in_range(1..=6)?;
            Pursued::Correlation(factor_values(u, length, p)?, u.arbitrary()?)
        }
        _ => Pursued::Fisher(u.choose(&Criterion::ALL)?.0, u.arbitrary()?),
    })
}

/// Points of up to 4 features, a pool of their indices (now and then empty, repeated or
/// out of range), a kernel of moderate or any parameters, 0 to 4 threads.
fn nystroem(u: &mut Unstructured, m: usize) -> Result<Nystroem> {
    let d = u.int_in_range(0..=4)?;
    let x = points(u, m, d)?;
    let layout = layout(u)?;
    let size = match u.int_in_range(0u8..=15)? {
        14 => 0,
        15 => m + 1,
        _ => u.int_in_range(1..=m.max(1))?,
    };
    let pool = (0..size)
        .map(|_| {
            if one_in(u, 64)? {
                Ok(m + u.int_in_range(0..=3)?)
            } else {
                u.int_in_range(0..=m.saturating_sub(1))
            }
        })
        .collect::<Result<_>>()?;
    let gamma = if one_in(u, 16)? {
        real(u)?
    } else {
        2f64.powi(u.int_in_range(-8..=3)?)
    };
    let kernel = match u.int_in_range(0u8..=2)? {
        0 => Kernel::Linear,
        1 => Kernel::Rbf { gamma },
        _ => Kernel::Poly {
            gamma,
            degree: u.int_in_range(0..=4)?,
            coef0: grid(u)?,
        },
    };
    Ok(Nystroem {
        x,
        layout,
        pool,
        kernel,
        n_threads: u.int_in_range(0..=4)?,
    })
}

fn check<F: Real>(values: &Array2<f64>, case: &Case) {
    let factor = Laid::<F>::new(values, case.layout);
    let phi = factor.view();
    match KernelOperator::factored_of(&phi, "factor") {
        Ok(operator) => {
            selections(operator, case);
            pursuit(operator, values, case);
        }
        Err(error) => {
            let (m, p) = phi.dim();
            let finite = phi.iter().all(|v| v.is_finite());
            let accepted = m > 0 && p > 0 && finite && phi.is_standard_layout();
            assert!(!accepted, "a valid factor refused: {error}");
        }
    }
    nystroem_factor::<F>(case);
}

/// The stop flag of a call: raised when the case says so.
fn flag(stopped: bool) -> AtomicBool {
    AtomicBool::new(stopped)
}

fn selections<F: Real>(operator: KernelOperator<'_, F>, case: &Case) {
    let m = operator.m();
    let one = |codes: &[u32], params: &GreedyParams| {
        select_classes_on(operator, codes, params, &flag(case.stopped))
    };
    let mut alone = Vec::with_capacity(case.problems.len());
    for Problem { labels, params } in &case.problems {
        let codes: Vec<u32> = labels.iter().map(|&l| u32::from(l)).collect();
        let outcome = one(&codes, params);
        checked(&outcome, m, params, case.stopped, |p| one(&codes, p));
        alone.push(outcome);
    }
    let Codes { codes, params } = &case.codes;
    let outcome = one(codes, params);
    checked(&outcome, m, params, case.stopped, |p| one(codes, p));
    let many: Vec<(&[bool], GreedyParams)> = case
        .problems
        .iter()
        .map(|p| (p.labels.as_slice(), p.params.clone()))
        .collect();
    match select_many_on(operator, &many, &flag(case.stopped)) {
        // A factor this small never shares passes: each problem runs as alone.
        Ok(selections) => {
            assert_eq!(selections.len(), alone.len());
            for (shared, alone) in selections.iter().zip(&alone) {
                assert_eq!(Ok(shared), alone.as_ref(), "select_many_on differs");
            }
        }
        Err(_) => {
            let threads = |p: &Problem| p.params.n_threads;
            let differ = case
                .problems
                .iter()
                .any(|p| threads(p) != threads(&case.problems[0]));
            assert!(
                differ || alone.iter().any(|a| a.is_err()),
                "select_many_on failed where every selection succeeded"
            );
        }
    }
}

/// The contract of one selection's `outcome`: an `Err` under a raised stop flag, else the
/// invariants of an `Ok` one and the same picks with one thread (`again`).
fn checked(
    outcome: &gkfda::Result<gkfda::Selection>,
    m: usize,
    params: &GreedyParams,
    stopped: bool,
    again: impl Fn(&GreedyParams) -> gkfda::Result<gkfda::Selection>,
) {
    let Ok(selection) = outcome else {
        return;
    };
    assert!(!stopped, "a raised stop flag did not stop the selection");
    holds(selection, m, params.k);
    if params.n_threads > 1 {
        let one_thread = GreedyParams {
            n_threads: 1,
            ..params.clone()
        };
        assert_eq!(
            again(&one_thread).as_ref(),
            Ok(selection),
            "depends on the thread count"
        );
    }
}

fn pursuit<F: Real>(operator: KernelOperator<'_, F>, values: &Array2<f64>, case: &Case) {
    let m = values.nrows();
    let narrowed: Vec<F>;
    let second: Array2<F>;
    let codes = &case.codes.codes;
    let method = match &case.pursued {
        Pursued::Matching(target) => {
            narrowed = target.iter().map(|&v| F::from_f64(v)).collect();
            Method::Matching { target: &narrowed }
        }
        Pursued::Components => Method::Components,
        Pursued::Correlation(other, signed) => {
            second = other.mapv(F::from_f64);
            let Ok(second) = KernelOperator::factored_of(&second.view(), "second_factor") else {
                return;
            };
            Method::Correlation {
                second,
                signed: *signed,
            }
        }
        Pursued::Fisher(criterion, seed) => Method::Fisher {
            classes: codes,
            criterion: *criterion,
            seed: *seed,
        },
    };
    let params = &case.pursuit;
    let Ok(pursuit) = pursue_on(operator, &method, params, &flag(case.stopped)) else {
        return;
    };
    assert!(!case.stopped, "a raised stop flag did not stop the pursuit");
    pursuit_holds(&pursuit, m, params.k);
    let other = PursuitParams {
        n_threads: params.n_threads % 3 + 1,
        ..params.clone()
    };
    let again = pursue_on(operator, &method, &other, &flag(false)).expect("the same problem");
    assert_eq!(
        again.indices, pursuit.indices,
        "picks depend on the thread count"
    );
}

fn nystroem_factor<F: Real>(case: &Case) {
    let Nystroem {
        x,
        layout,
        pool,
        kernel,
        n_threads,
    } = &case.nystroem;
    let points = Laid::<F>::new(x, *layout);
    let build = |threads: usize, stopped: bool| {
        nystroem_with_stop(points.view(), pool, kernel, threads, &flag(stopped))
    };
    let Ok(phi) = build(*n_threads, case.stopped) else {
        return;
    };
    assert!(!case.stopped, "a raised stop flag did not stop the factor");
    let m = x.nrows();
    assert_eq!(phi.nrows(), m, "the factor has a row per point");
    assert!(phi.ncols() <= pool.len(), "more columns than pool points");
    let again = build(n_threads % 4 + 1, false).expect("the same factor with other threads");
    assert!(
        same_bits(phi.view(), again.view()),
        "depends on the thread count"
    );
    let on_grid = points.view().iter().all(|v| v.as_f64().abs() <= 16.0);
    let moderate = match *kernel {
        Kernel::Linear => true,
        Kernel::Rbf { gamma } | Kernel::Poly { gamma, .. } => (1e-3..=8.0).contains(&gamma),
    };
    if on_grid && moderate {
        assert!(
            phi.iter().all(|v| v.is_finite()),
            "a factor of points on the grid is not finite"
        );
    }
    if phi.ncols() > 0 && phi.iter().all(|v| v.is_finite()) {
        let view: ArrayView2<F> = phi.view();
        KernelOperator::factored_of(&view, "factor").expect("the factor is a valid operator");
    }
}
