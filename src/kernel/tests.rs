use super::*;
use ndarray::{s, Array2};
use std::sync::atomic::AtomicBool;

fn points(n: usize, d: usize, seed: u64) -> Array2<f64> {
    let mut state = seed;
    Array2::from_shape_fn((n, d), |_| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    })
}

fn naive(x: &Array2<f64>, z: &Array2<f64>, kernel: &Kernel) -> Array2<f64> {
    Array2::from_shape_fn((x.nrows(), z.nrows()), |(i, j)| {
        let (a, b) = (x.row(i), z.row(j));
        match *kernel {
            Kernel::Linear => a.dot(&b),
            Kernel::Rbf { gamma } => (-gamma * (&a - &b).mapv(|v| v * v).sum()).exp(),
            Kernel::Poly {
                gamma,
                degree,
                coef0,
            } => (gamma * a.dot(&b) + coef0).powi(degree as i32),
        }
    })
}

#[test]
fn gram_and_cross_match_the_definitions_at_odd_sizes() {
    let kernels = [
        Kernel::Linear,
        Kernel::Rbf { gamma: 0.7 },
        Kernel::Poly {
            gamma: 0.5,
            degree: 3,
            coef0: 1.0,
        },
    ];
    for &(n, p, d) in &[(1, 1, 1), (3, 19, 2), (131, 67, 5)] {
        let (x, z) = (points(n, d, 1), points(p, d, 2));
        for kernel in &kernels {
            let g = gram(x.view(), kernel, 2).unwrap();
            let expected = naive(&x, &x, kernel);
            assert!((&g - &expected).iter().all(|e| e.abs() < 1e-12));
            assert_eq!(g, g.t(), "gram must be exactly symmetric");
            let c = cross(x.view(), z.view(), kernel, 2).unwrap();
            assert!((&c - &naive(&x, &z, kernel))
                .iter()
                .all(|e| e.abs() < 1e-12));
            assert_eq!(c, cross(x.view(), z.view(), kernel, 1).unwrap());
        }
    }
}

#[test]
fn a_raised_stop_flag_ends_the_kernel_matrix() {
    let x = points(200, 3, 4);
    let mut out = Array2::<f64>::zeros((200, 200));
    let kernel = Kernel::Rbf { gamma: 0.5 };
    let raised = AtomicBool::new(true);
    assert_eq!(
        gram_into_with_stop(x.view(), &kernel, 2, out.view_mut(), &raised),
        Err(Error::Interrupted)
    );
    let lowered = AtomicBool::new(false);
    gram_into_with_stop(x.view(), &kernel, 2, out.view_mut(), &lowered).unwrap();
    assert_eq!(out, gram(x.view(), &kernel, 2).unwrap());
}

#[test]
fn a_raised_stop_flag_ends_cross_kernels_and_expansions_on_any_thread_count() {
    let (x, basis) = (points(150, 3, 8), points(20, 3, 9));
    let weights = points(20, 2, 10);
    let bias = [0.5, -1.0];
    let kernel = Kernel::Rbf { gamma: 0.5 };
    let (raised, lowered) = (AtomicBool::new(true), AtomicBool::new(false));
    for threads in [1, 2] {
        assert_eq!(
            cross_with_stop(x.view(), basis.view(), &kernel, threads, &raised),
            Err(Error::Interrupted)
        );
        assert_eq!(
            cross_with_stop(x.view(), basis.view(), &kernel, threads, &lowered),
            cross(x.view(), basis.view(), &kernel, threads)
        );
        let expand = |stop| {
            expansion_with_stop(
                x.view(),
                basis.view(),
                weights.view(),
                &bias,
                &kernel,
                threads,
                stop,
            )
        };
        assert_eq!(expand(&raised), Err(Error::Interrupted));
        assert_eq!(
            expand(&lowered),
            expansion(
                x.view(),
                basis.view(),
                weights.view(),
                &bias,
                &kernel,
                threads
            )
        );
    }
}

#[test]
fn expansion_equals_kernel_times_weights() {
    let (x, basis) = (points(150, 4, 5), points(13, 4, 6));
    let weights = points(13, 3, 7);
    let bias = [0.5, -1.0, 2.0];
    let kernel = Kernel::Rbf { gamma: 0.8 };
    let expected = naive(&x, &basis, &kernel).dot(&weights) + ndarray::arr1(&bias);
    for threads in [1, 2] {
        let actual = expansion(
            x.view(),
            basis.view(),
            weights.view(),
            &bias,
            &kernel,
            threads,
        )
        .unwrap();
        assert!((&actual - &expected).iter().all(|e| e.abs() < 1e-12));
    }
    let wrong = expansion(
        x.view(),
        basis.view(),
        weights.slice(s![..5, ..]),
        &bias,
        &kernel,
        1,
    );
    assert!(wrong.is_err());
}

#[test]
fn gram_into_a_caller_array_is_gram_and_refuses_a_wrong_one() {
    let x = points(70, 3, 5);
    let kernel = Kernel::Rbf { gamma: 0.7 };
    let expected = gram(x.view(), &kernel, 2).unwrap();
    let mut out = Array2::from_elem((70, 70), f64::NAN); // every element is written
    gram_into(x.view(), &kernel, 2, out.view_mut()).unwrap();
    assert_eq!(out, expected);
    let mut wrong = Array2::<f64>::zeros((70, 69));
    assert!(gram_into(x.view(), &kernel, 2, wrong.view_mut()).is_err());
    let mut transposed = Array2::<f64>::zeros((70, 70));
    assert!(gram_into(x.view(), &kernel, 2, transposed.view_mut().reversed_axes()).is_err());
}

#[test]
fn f32_kernels_and_single_rows_match_f64() {
    // f32 Gram blocks take faer's f32 GEMM; a row's expansion is the same alone or in a batch.
    let (x, basis) = (points(70, 6, 11), points(9, 6, 12));
    let weights = points(9, 2, 13);
    let (x32, basis32) = (x.mapv(|v| v as f32), basis.mapv(|v| v as f32));
    let bias = [0.25, -0.5];
    for kernel in [Kernel::Linear, Kernel::Rbf { gamma: 0.6 }] {
        let close = |a: &Array2<f32>, b: &Array2<f64>| {
            a.iter().zip(b).all(|(a, b)| (*a as f64 - b).abs() < 1e-5)
        };
        assert!(close(
            &gram(x32.view(), &kernel, 2).unwrap(),
            &naive(&x, &x, &kernel)
        ));
        let g32 = gram(x32.view(), &kernel, 2).unwrap();
        assert_eq!(g32, g32.t());
        assert!(close(
            &cross(x32.view(), basis32.view(), &kernel, 1).unwrap(),
            &naive(&x, &basis, &kernel)
        ));
        let all = expansion(x.view(), basis.view(), weights.view(), &bias, &kernel, 1);
        let all = all.unwrap();
        for i in [0, 33, 69] {
            let one = x.slice(s![i..i + 1, ..]);
            let row = expansion(one, basis.view(), weights.view(), &bias, &kernel, 1);
            let row = row.unwrap();
            assert!((&row.row(0) - &all.row(i)).iter().all(|e| e.abs() < 1e-12));
            let one32 = x32.slice(s![i..i + 1, ..]);
            let row32 = expansion(one32, basis32.view(), weights.view(), &bias, &kernel, 1);
            assert!((&row32.unwrap().row(0) - &all.row(i))
                .iter()
                .all(|e| e.abs() < 1e-4));
        }
    }
}

#[test]
fn float32_rbf_kernels_far_from_the_origin_keep_their_digits() {
    let rbf = Kernel::Rbf { gamma: 0.7 };
    for offset in [1e2, 1e3, 1e4] {
        let (x, z) = (points(40, 3, 5), points(7, 3, 6));
        let (x, z) = (x.mapv(|v| v + offset), z.mapv(|v| v + offset));
        let (x32, z32) = (x.mapv(|v| v as f32), z.mapv(|v| v as f32));
        // The float64 kernels of the float32 points: what float32 can be asked to match.
        let (x64, z64) = (x32.mapv(f64::from), z32.mapv(f64::from));
        let close = |a: &Array2<f32>, b: &Array2<f64>| {
            a.iter().zip(b).all(|(a, b)| (*a as f64 - b).abs() < 1e-5)
        };
        assert!(close(
            &gram(x32.view(), &rbf, 2).unwrap(),
            &naive(&x64, &x64, &rbf)
        ));
        let cross32 = cross(x32.view(), z32.view(), &rbf, 1).unwrap();
        assert!(close(&cross32, &naive(&x64, &z64, &rbf)));
        let weights = points(7, 1, 7);
        let values = expansion(x32.view(), z32.view(), weights.view(), &[0.0], &rbf, 1);
        let expected = naive(&x64, &z64, &rbf).dot(&weights);
        let error = (&values.unwrap() - &expected).mapv(f64::abs);
        assert!(error.iter().all(|e| *e < 1e-4), "offset {offset}");
    }
}

#[test]
fn float64_rbf_predictions_far_from_the_origin_keep_their_digits() {
    // Every prediction path (cross kernel, batch expansion, one-row direct expansion)
    // against the difference-then-square definition, the points moved by a common offset.
    let rbf = Kernel::Rbf { gamma: 0.7 };
    let weights = points(7, 2, 7);
    let bias = [0.25, -0.5];
    for offset in [0.0, 1e3, 1e6, 1e7] {
        let (x, z) = (points(40, 3, 5), points(7, 3, 6));
        let (x, z) = (x.mapv(|v| v + offset), z.mapv(|v| v + offset));
        let expected = naive(&x, &z, &rbf);
        // Differences of points 1e7 apart are exact to their own rounding, 1e-9 there.
        let tolerance = if offset > 1e6 { 1e-8 } else { 1e-9 };
        let error = (&cross(x.view(), z.view(), &rbf, 2).unwrap() - &expected).mapv(f64::abs);
        assert!(error.iter().all(|e| *e < tolerance), "offset {offset}");
        let values = expected.dot(&weights) + ndarray::arr1(&bias);
        let batch = expansion(x.view(), z.view(), weights.view(), &bias, &rbf, 1).unwrap();
        let error = (&batch - &values).mapv(f64::abs);
        assert!(error.iter().all(|e| *e < tolerance), "offset {offset}");
        let bases = Bases::new(z.view(), &rbf);
        for i in [0, 17, 38] {
            let one = x.slice(s![i..i + 2, ..]);
            let direct = expansion_direct(one, &bases, weights.view(), &bias, &rbf).unwrap();
            let error = (&direct - &values.slice(s![i..i + 2, ..])).mapv(f64::abs);
            assert!(error.iter().all(|e| *e < tolerance), "offset {offset}");
        }
    }
}

#[test]
fn float32_points_beyond_the_range_of_their_squares_are_at_kernel_value_zero() {
    // Bases on both sides of their centre: the products x·s of a point near f32::MAX
    // overflow to +∞ and −∞, and ‖x‖² to +∞; the point is at kernel value 0, the bias
    // alone, as the float64 kernel gives, not a NaN refused as an overflow.
    let rbf = Kernel::Rbf { gamma: 0.5 };
    let basis = points(6, 3, 2).mapv(|v| (3.0 * v) as f32);
    let weights = points(6, 1, 3);
    for value in [1e30_f32, 3e38, -3e38] {
        let mut far = Array2::from_elem((3, 3), value);
        far[[1, 0]] = -value;
        far[[2, 1]] = 0.5;
        let c = cross(far.view(), basis.view(), &rbf, 1).unwrap();
        assert!(c.iter().all(|v| *v == 0.0), "{value}: {c}");
        let values = expansion(far.view(), basis.view(), weights.view(), &[0.5], &rbf, 1);
        assert!(values.unwrap().iter().all(|v| *v == 0.5), "{value}");
        let bases = Bases::new(basis.view(), &rbf);
        let direct = expansion_direct(far.view(), &bases, weights.view(), &[0.5], &rbf);
        assert!(direct.unwrap().iter().all(|v| *v == 0.5), "{value}");
    }
    // Points both beyond the range (a Gram matrix of them, whose diagonal is 1) are not
    // taken for distant: their kernel is refused as an overflow.
    // (float64: its Gram matrices are not moved to their centre.)
    let huge = Array2::from_elem((2, 3), 1e160_f64);
    let refused = match gram(huge.view(), &rbf, 1) {
        Ok(k) => k.iter().any(|v| v.is_nan()),
        Err(_) => true,
    };
    assert!(refused);
    // A NaN point keeps its NaN.
    let nan = Array2::from_elem((1, 3), f32::NAN);
    assert!(cross(nan.view(), basis.view(), &rbf, 1)
        .unwrap()
        .iter()
        .all(|v| v.is_nan()));
}

#[test]
fn out_of_range_parameters_are_refused_before_any_work() {
    let x = points(5, 3, 1);
    let poly = Kernel::Poly {
        gamma: 1.0,
        degree: u32::MAX,
        coef0: 1.0,
    };
    let error = gram(x.view(), &poly, 1).unwrap_err();
    assert!(matches!(
        error,
        Error::InvalidArgument {
            argument: "degree",
            ..
        }
    ));
    // A gamma float32 cannot hold is refused in float32 and fine in float64.
    let wide = Kernel::Rbf { gamma: 1e39 };
    let error = gram(x.mapv(|v| v as f32).view(), &wide, 1).unwrap_err();
    assert!(matches!(
        error,
        Error::InvalidArgument {
            argument: "gamma",
            ..
        }
    ));
    assert!(gram(x.view(), &wide, 1)
        .unwrap()
        .iter()
        .all(|v| v.is_finite()));
}

#[test]
fn expansions_that_overflow_are_refused_not_returned_as_nan() {
    let basis = points(4, 3, 2);
    let weights = points(4, 1, 3);
    let poly = Kernel::Poly {
        gamma: 1.0,
        degree: 3,
        coef0: 1.0,
    };
    let huge = points(2, 3, 4).mapv(|v| v * 1e200);
    let error = expansion(huge.view(), basis.view(), weights.view(), &[0.0], &poly, 1);
    assert!(matches!(
        error,
        Err(Error::InvalidArgument { argument: "X", .. })
    ));
    // A float32 RBF point too far for float32's squares is at kernel value 0 from
    // every basis (both sets are moved to the bases' centre first): the bias alone.
    let rbf = Kernel::Rbf { gamma: 1.0 };
    let far = Array2::from_elem((2, 3), 1e38_f32);
    let basis32 = Array2::from_elem((4, 3), 3.0_f32);
    let values = expansion(far.view(), basis32.view(), weights.view(), &[0.5], &rbf, 1);
    assert!(values.unwrap().iter().all(|v| *v == 0.5));
    let near = points(2, 3, 4);
    assert!(expansion(near.view(), basis.view(), weights.view(), &[0.0], &poly, 1).is_ok());
}

#[test]
fn a_point_with_a_nan_gives_nan_kernel_values_not_ones() {
    let mut x = points(9, 3, 4);
    x[[2, 1]] = f64::NAN;
    let kernel = Kernel::Rbf { gamma: 0.5 };
    let k = gram(x.view(), &kernel, 1).unwrap();
    for j in (0..9).filter(|&j| j != 2) {
        assert!(
            k[[2, j]].is_nan() && k[[j, 2]].is_nan(),
            "K[2, {j}] = {}",
            k[[2, j]]
        );
        assert!(k[[0, j]].is_finite());
    }
    let c = cross(x.view(), points(4, 3, 8).view(), &kernel, 1).unwrap();
    assert!(c.row(2).iter().all(|v| v.is_nan()));
    assert!(c.row(0).iter().all(|v| v.is_finite()));
}

#[test]
fn bad_parameters_are_errors() {
    let x = points(3, 2, 1);
    assert!(gram(x.view(), &Kernel::Rbf { gamma: -1.0 }, 1).is_err());
    assert!(gram(
        x.view(),
        &Kernel::Poly {
            gamma: 1.0,
            degree: 0,
            coef0: 1.0
        },
        1
    )
    .is_err());
    assert!(cross(x.view(), points(2, 3, 1).view(), &Kernel::Linear, 1).is_err());
}
