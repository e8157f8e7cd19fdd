//! `pursuit::pursue` on small kernels, in `f32` and `f64`: any kernel (NaN, ±∞, huge,
//! subnormal, asymmetric, not square, in any layout), any method with any target, second
//! kernel or class codes, and any `PursuitParams`. It must return `Ok` or `Err`, never
//! panic; an `Ok` pursuit holds distinct indices below `m`, `k` of them unless it stopped
//! early, one score each, and does not depend on the thread count.
#![no_main]

use arbitrary::{Result, Unstructured};
use gkfda::operator::KernelOperator;
use gkfda::pursuit::{pursue, Method, PursuitParams};
use gkfda::{Criterion, Real};
use gkfda_fuzz::{kernel_values, layout, one_in, pursuit_holds, real, Laid, Layout};
use libfuzzer_sys::fuzz_target;
use ndarray::Array2;

fuzz_target!(|data: &[u8]| {
    // Running out of bytes ends an input early; that is not a finding.
    let _ = run(&mut Unstructured::new(data));
});

/// What a method needs besides the kernel, as `f64` (narrowed with the kernel).
enum Inputs {
    Matching(Vec<f64>),
    Components,
    Correlation(Array2<f64>, bool),
    Fisher(Vec<u32>, Criterion, u64),
}

fn run(u: &mut Unstructured) -> Result<()> {
    let m: usize = u.int_in_range(0..=30)?;
    let length = match u.int_in_range(0u8..=31)? {
        30 => m + 1,
        31 => m.saturating_sub(1),
        _ => m,
    };
    let inputs = match u.int_in_range(0u8..=3)? {
        0 => Inputs::Matching((0..length).map(|_| real(u)).collect::<Result<_>>()?),
        1 => Inputs::Components,
        2 => Inputs::Correlation(kernel_values(u, length)?, u.arbitrary()?),
        _ => {
            let n_classes = u.int_in_range(1..=4u32)?;
            let codes = (0..length)
                .map(|_| u.int_in_range(0..=n_classes))
                .collect::<Result<_>>()?;
            Inputs::Fisher(codes, u.choose(&Criterion::ALL)?.0, u.arbitrary()?)
        }
    };
    let k = match u.int_in_range(0u8..=31)? {
        30 => 0,
        31 => m + 1,
        _ => u.int_in_range(1..=m.max(1))?,
    };
    let tol = match u.int_in_range(0u8..=15)? {
        13 | 14 => Some(10f64.powi(-u.int_in_range(0..=16)?)),
        15 => Some(real(u)?),
        _ => None,
    };
    let n_threads = if one_in(u, 16)? {
        0
    } else {
        u.int_in_range(1..=3)?
    };
    let params = PursuitParams { k, tol, n_threads };
    let (first, second) = (layout(u)?, layout(u)?);
    // The kernel last: its m² values may use up the input.
    let values = kernel_values(u, m)?;
    if u.arbitrary()? {
        check::<f32>(&values, first, second, &inputs, &params);
    } else {
        check::<f64>(&values, first, second, &inputs, &params);
    }
    Ok(())
}

fn check<F: Real>(
    values: &Array2<f64>,
    layout: Layout,
    second_layout: Layout,
    inputs: &Inputs,
    params: &PursuitParams,
) {
    let kernel = Laid::<F>::new(values, layout);
    let narrowed: Vec<F>;
    let second: Laid<F>;
    let method = match inputs {
        Inputs::Matching(target) => {
            narrowed = target.iter().map(|&v| F::from_f64(v)).collect();
            Method::Matching { target: &narrowed }
        }
        Inputs::Components => Method::Components,
        Inputs::Correlation(other, signed) => {
            second = Laid::<F>::new(other, second_layout);
            // A second kernel that is not square or not contiguous is refused here.
            let Ok(second) = KernelOperator::dense_of(&second.view(), "second_kernel") else {
                return;
            };
            Method::Correlation {
                second,
                signed: *signed,
            }
        }
        Inputs::Fisher(classes, criterion, seed) => Method::Fisher {
            classes,
            criterion: *criterion,
            seed: *seed,
        },
    };
    let Ok(pursuit) = pursue(kernel.view(), &method, params) else {
        return;
    };
    let m = values.nrows();
    pursuit_holds(&pursuit, m, params.k);
    let other = PursuitParams {
        n_threads: params.n_threads % 3 + 1,
        ..params.clone()
    };
    let again = pursue(kernel.view(), &method, &other).expect("the same problem is valid");
    assert_eq!(
        again.indices, pursuit.indices,
        "picks depend on the thread count"
    );
}
