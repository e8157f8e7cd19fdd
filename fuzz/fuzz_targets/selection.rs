//! `select` and `select_many` on small kernels, in `f32` and `f64`: any kernel (NaN, ±∞,
//! huge, subnormal, asymmetric, not square, in any layout), any labels and any
//! `GreedyParams`. They must return `Ok` or `Err`, never panic; an `Ok` selection holds
//! distinct indices below `m`, `k` of them unless it stopped early, and does not depend
//! on the thread count nor on being one of several problems.
#![no_main]

use arbitrary::{Result, Unstructured};
use gkfda::{selection, Criterion, Deflation, GreedyParams, Real};
use gkfda_fuzz::{holds, kernel_values, layout, problems, threads, Laid, Problem};
use libfuzzer_sys::fuzz_target;
use ndarray::ArrayView2;

fuzz_target!(|data: &[u8]| {
    // Running out of bytes ends an input early; that is not a finding.
    let _ = run(&mut Unstructured::new(data));
});

fn run(u: &mut Unstructured) -> Result<()> {
    let m = u.int_in_range(0..=40)?;
    let layout = layout(u)?;
    let n_threads = threads(u)?;
    let problems = problems(u, m, n_threads, 4)?;
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
