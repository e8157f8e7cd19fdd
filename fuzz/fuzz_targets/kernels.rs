//! The kernel functions (`Kernel::from_name`, `validate`, `gram`, `gram_into`, `cross`,
//! `expansion`) on small point sets of any values, in `f32` and `f64` and any layout,
//! with any kernel name and parameters and 0 to 4 threads. They must return `Ok` or
//! `Err`, never panic; `Ok` outputs have the right shape, a Gram matrix is exactly
//! symmetric, no output depends on the thread count, and a row of `cross` or `expansion`
//! is the same alone as in its batch.
#![no_main]

use arbitrary::{Result, Unstructured};
use gkfda::{kernel, Kernel, Real};
use gkfda_fuzz::{grid, matrix, one_in, points, real, same_bits, Laid, Layout};
use libfuzzer_sys::fuzz_target;
use ndarray::{s, Array2, ArrayView2};

fuzz_target!(|data: &[u8]| {
    // Running out of bytes ends an input early; that is not a finding.
    let _ = run(&mut Unstructured::new(data));
});

struct Case {
    kernel: Kernel,
    x: Array2<f64>,
    z: Array2<f64>,
    x_layout: Layout,
    z_layout: Layout,
    weights: Array2<f64>,
    bias: Vec<f64>,
    n_threads: usize,
    /// Rows of `x` checked alone against their batch.
    rows: Vec<usize>,
}

fn run(u: &mut Unstructured) -> Result<()> {
    let Some(kernel) = kernel_named(u)? else {
        return Ok(());
    };
    let (n, p, d) = (size(u)?, size(u)?, u.int_in_range(0..=5)?);
    let dz = if one_in(u, 16)? { d + 1 } else { d };
    let x = points(u, n, d)?;
    let z = points(u, p, dz)?;
    let (x_layout, z_layout) = (u.arbitrary()?, u.arbitrary()?);
    let classes = u.int_in_range(0..=3)?;
    let bases = if one_in(u, 16)? { p + 1 } else { p };
    let weights = matrix(u, bases, classes, |u| {
        if one_in(u, 8)? {
            real(u)
        } else {
            grid(u)
        }
    })?;
    let bias_len = if one_in(u, 16)? { classes + 1 } else { classes };
    let bias = (0..bias_len).map(|_| grid(u)).collect::<Result<_>>()?;
    let n_threads = u.int_in_range(0..=4)?;
    let mut rows = Vec::new();
    for _ in 0..u.int_in_range(0..=2)?.min(n) {
        rows.push(u.choose_index(n)?);
    }
    let case = Case {
        kernel,
        x,
        z,
        x_layout,
        z_layout,
        weights,
        bias,
        n_threads,
        rows,
    };
    if u.arbitrary()? {
        check::<f32>(&case);
    } else {
        check::<f64>(&case);
    }
    Ok(())
}

/// Mostly a handful of points, now and then enough for several blocks of rows (64 each),
/// which the kernels spread over threads.
fn size(u: &mut Unstructured) -> Result<usize> {
    if one_in(u, 8)? {
        u.int_in_range(0..=150)
    } else {
        u.int_in_range(0..=8)
    }
}

/// The kernel `Kernel::from_name` makes of a name (known, or any string) and parameters
/// (moderate, or any value); `None` when it refuses the name, which it must do exactly
/// for the names it does not list.
fn kernel_named(u: &mut Unstructured) -> Result<Option<Kernel>> {
    let name: String = if one_in(u, 8)? {
        u.arbitrary()?
    } else {
        u.choose(&Kernel::NAMES)?.to_string()
    };
    let gamma = if one_in(u, 4)? {
        real(u)?
    } else {
        2f64.powi(u.int_in_range(-10..=4)?)
    };
    let degree = match u.int_in_range(0u8..=7)? {
        5 => 0,
        6 => u.arbitrary()?,
        7 => i32::MAX as u32 + u.int_in_range(0..=1)?,
        _ => u.int_in_range(1..=5)?,
    };
    let coef0 = if one_in(u, 4)? { real(u)? } else { grid(u)? };
    let named = Kernel::from_name(&name, gamma, degree, coef0);
    assert_eq!(
        named.is_ok(),
        Kernel::NAMES.contains(&name.as_str()),
        "{name:?}"
    );
    Ok(named.ok())
}

fn check<F: Real>(case: &Case) {
    let x = Laid::<F>::new(&case.x, case.x_layout);
    let z = Laid::<F>::new(&case.z, case.z_layout);
    let (x, z) = (x.view(), z.view());
    let valid = case.kernel.validate().is_ok();
    check_gram(x, case, valid);
    check_cross(x, z, case, valid);
    check_expansion(x, z, case, valid);
}

fn check_gram<F: Real>(x: ArrayView2<F>, case: &Case, valid: bool) {
    let (kernel, n_threads) = (&case.kernel, case.n_threads);
    let m = x.nrows();
    let Ok(gram) = kernel::gram(x, kernel, n_threads) else {
        return;
    };
    assert!(
        valid,
        "gram accepted a kernel that validate refuses: {kernel:?}"
    );
    assert_eq!(gram.dim(), (m, m));
    for i in 0..m {
        for j in 0..i {
            let (a, b) = (gram[[i, j]].as_f64(), gram[[j, i]].as_f64());
            assert!(
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "asymmetric at ({i}, {j})"
            );
        }
        if let Kernel::Rbf { .. } = kernel {
            assert_eq!(gram[[i, i]].as_f64(), 1.0, "RBF diagonal at {i}");
        }
    }
    if n_threads != 1 {
        let one_thread = kernel::gram(x, kernel, 1).expect("the same call on one thread");
        assert!(
            same_bits(gram.view(), one_thread.view()),
            "gram depends on the thread count"
        );
    }
    let mut out = Array2::from_elem((m, m), F::from_f64(f64::NAN));
    kernel::gram_into(x, kernel, n_threads, out.view_mut()).expect("gram_into as gram");
    assert!(
        same_bits(gram.view(), out.view()),
        "gram_into differs from gram"
    );
    let mut wrong = Array2::from_elem((m, m + 1), F::from_f64(0.0));
    assert!(kernel::gram_into(x, kernel, n_threads, wrong.view_mut()).is_err());
    if m > 1 {
        let mut transposed = Array2::from_elem((m, m), F::from_f64(0.0));
        let refused =
            kernel::gram_into(x, kernel, n_threads, transposed.view_mut().reversed_axes());
        assert!(
            refused.is_err(),
            "gram_into wrote into a column-major array"
        );
    }
}

fn check_cross<F: Real>(x: ArrayView2<F>, z: ArrayView2<F>, case: &Case, valid: bool) {
    let (kernel, n_threads) = (&case.kernel, case.n_threads);
    let Ok(cross) = kernel::cross(x, z, kernel, n_threads) else {
        return;
    };
    assert!(
        valid,
        "cross accepted a kernel that validate refuses: {kernel:?}"
    );
    assert_eq!(
        x.ncols(),
        z.ncols(),
        "cross accepted points of different widths"
    );
    assert_eq!(cross.dim(), (x.nrows(), z.nrows()));
    if n_threads != 1 {
        let one_thread = kernel::cross(x, z, kernel, 1).expect("the same call on one thread");
        assert!(
            same_bits(cross.view(), one_thread.view()),
            "cross depends on the thread count"
        );
    }
    for &i in &case.rows {
        let row = kernel::cross(x.slice(s![i..i + 1, ..]), z, kernel, n_threads).expect("one row");
        assert!(
            same_bits(row.view(), cross.slice(s![i..i + 1, ..])),
            "cross row {i} alone"
        );
    }
}

fn check_expansion<F: Real>(x: ArrayView2<F>, z: ArrayView2<F>, case: &Case, valid: bool) {
    let (kernel, n_threads) = (&case.kernel, case.n_threads);
    let (weights, bias) = (case.weights.view(), case.bias.as_slice());
    let expand =
        |x: ArrayView2<F>, n_threads| kernel::expansion(x, z, weights, bias, kernel, n_threads);
    let Ok(values) = expand(x, n_threads) else {
        return;
    };
    assert!(
        valid,
        "expansion accepted a kernel that validate refuses: {kernel:?}"
    );
    assert_eq!(
        x.ncols(),
        z.ncols(),
        "expansion accepted points of different widths"
    );
    assert_eq!(
        weights.dim(),
        (z.nrows(), bias.len()),
        "expansion accepted mismatched weights"
    );
    assert_eq!(values.dim(), (x.nrows(), bias.len()));
    assert!(
        values.iter().all(|v| v.is_finite()),
        "expansion returned a non-finite value"
    );
    if n_threads != 1 {
        let one_thread = expand(x, 1).expect("the same call on one thread");
        assert!(
            same_bits(values.view(), one_thread.view()),
            "expansion depends on the thread count"
        );
    }
    for &i in &case.rows {
        let row = expand(x.slice(s![i..i + 1, ..]), n_threads).expect("one row");
        assert!(
            same_bits(row.view(), values.slice(s![i..i + 1, ..])),
            "expansion row {i} alone"
        );
    }
}
