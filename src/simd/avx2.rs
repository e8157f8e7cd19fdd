//! The AVX2 and FMA bodies of the [`super::Dots`] kernels (256-bit, 16 registers).

use super::portable::with_tail;
use crate::tuning::{LANES, PREFETCH_AHEAD};
use std::arch::x86_64::*;

/// [`super::Dots::subtract_terms`] with 4-wide fused negated multiply-adds.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn subtract_terms_f64<const R: usize>(
    out: &mut [f64],
    vectors: [&[f64]; R],
    coefficients: [f64; R],
) {
    let n = out.len();
    assert!(vectors.iter().all(|v| v.len() >= n));
    let body = n - n % 4;
    let broadcast: [__m256d; R] = std::array::from_fn(|r| _mm256_set1_pd(coefficients[r]));
    let mut l = 0;
    while l < body {
        // SAFETY: l + 4 <= n, within `out` and every vector (asserted above).
        unsafe {
            let mut value = _mm256_loadu_pd(out.as_ptr().add(l));
            for r in 0..R {
                value = _mm256_fnmadd_pd(
                    broadcast[r],
                    _mm256_loadu_pd(vectors[r].as_ptr().add(l)),
                    value,
                );
            }
            _mm256_storeu_pd(out.as_mut_ptr().add(l), value);
        }
        l += 4;
    }
    for l in body..n {
        for r in 0..R {
            out[l] = (-coefficients[r]).mul_add(vectors[r][l], out[l]);
        }
    }
}

/// [`super::Dots::subtract_terms`] with 8-wide fused negated multiply-adds.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn subtract_terms_f32<const R: usize>(
    out: &mut [f32],
    vectors: [&[f32]; R],
    coefficients: [f32; R],
) {
    let n = out.len();
    assert!(vectors.iter().all(|v| v.len() >= n));
    let body = n - n % 8;
    let broadcast: [__m256; R] = std::array::from_fn(|r| _mm256_set1_ps(coefficients[r]));
    let mut l = 0;
    while l < body {
        // SAFETY: l + 8 <= n, within `out` and every vector (asserted above).
        unsafe {
            let mut value = _mm256_loadu_ps(out.as_ptr().add(l));
            for r in 0..R {
                value = _mm256_fnmadd_ps(
                    broadcast[r],
                    _mm256_loadu_ps(vectors[r].as_ptr().add(l)),
                    value,
                );
            }
            _mm256_storeu_ps(out.as_mut_ptr().add(l), value);
        }
        l += 8;
    }
    for l in body..n {
        for r in 0..R {
            out[l] = (-coefficients[r]).mul_add(vectors[r][l], out[l]);
        }
    }
}

/// One 4-wide f64 accumulator per output; each loaded row element feeds `R` FMAs and
/// each right-hand side element `ROWS`, so a 4×3 tile makes 12 FMAs per 7 loads.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn tile_f64<const ROWS: usize, const R: usize>(
    rows: [&[f64]; ROWS],
    rhs: [&[f64]; R],
    range: std::ops::Range<usize>,
    acc: &mut [[f64; 4]],
    stride: usize,
) {
    assert!(rows.iter().all(|row| row.len() >= range.end));
    assert!(rhs.iter().all(|x| x.len() >= range.end));
    assert!(acc.len() >= (ROWS - 1) * stride + R);
    debug_assert_eq!(range.len() % 4, 0);
    let mut registers = [[_mm256_setzero_pd(); R]; ROWS];
    for r in 0..ROWS {
        for j in 0..R {
            // SAFETY: one 4-wide vector from 4 lanes.
            registers[r][j] = unsafe { _mm256_loadu_pd(acc[r * stride + j].as_ptr()) };
        }
    }
    let mut l = range.start;
    while l < range.end {
        // SAFETY: l + 4 <= range.end, within every row and rhs (asserted above).
        unsafe {
            let mut k = [_mm256_setzero_pd(); ROWS];
            for r in 0..ROWS {
                k[r] = _mm256_loadu_pd(rows[r].as_ptr().add(l));
            }
            for j in 0..R {
                let x = _mm256_loadu_pd(rhs[j].as_ptr().add(l));
                for r in 0..ROWS {
                    registers[r][j] = _mm256_fmadd_pd(k[r], x, registers[r][j]);
                }
            }
        }
        l += 4;
    }
    for r in 0..ROWS {
        for j in 0..R {
            // SAFETY: one 4-wide vector into 4 lanes.
            unsafe { _mm256_storeu_pd(acc[r * stride + j].as_mut_ptr(), registers[r][j]) };
        }
    }
}

/// One 8-wide f32 accumulator per output (see [`tile_f64`]).
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn tile_f32<const ROWS: usize, const R: usize>(
    rows: [&[f32]; ROWS],
    rhs: [&[f32]; R],
    range: std::ops::Range<usize>,
    acc: &mut [[f32; 8]],
    stride: usize,
) {
    assert!(rows.iter().all(|row| row.len() >= range.end));
    assert!(rhs.iter().all(|x| x.len() >= range.end));
    assert!(acc.len() >= (ROWS - 1) * stride + R);
    debug_assert_eq!(range.len() % 8, 0);
    let mut registers = [[_mm256_setzero_ps(); R]; ROWS];
    for r in 0..ROWS {
        for j in 0..R {
            // SAFETY: one 8-wide vector from 8 lanes.
            registers[r][j] = unsafe { _mm256_loadu_ps(acc[r * stride + j].as_ptr()) };
        }
    }
    let mut l = range.start;
    while l < range.end {
        // SAFETY: l + 8 <= range.end, within every row and rhs (asserted above).
        unsafe {
            let mut k = [_mm256_setzero_ps(); ROWS];
            for r in 0..ROWS {
                k[r] = _mm256_loadu_ps(rows[r].as_ptr().add(l));
            }
            for j in 0..R {
                let x = _mm256_loadu_ps(rhs[j].as_ptr().add(l));
                for r in 0..ROWS {
                    registers[r][j] = _mm256_fmadd_ps(k[r], x, registers[r][j]);
                }
            }
        }
        l += 8;
    }
    for r in 0..ROWS {
        for j in 0..R {
            // SAFETY: one 8-wide vector into 8 lanes.
            unsafe { _mm256_storeu_ps(acc[r * stride + j].as_mut_ptr(), registers[r][j]) };
        }
    }
}

/// The tile of a wide pass (see [`super::Dots::packed_tile`]): per column, `V` loads of
/// the packed right-hand sides and one broadcast per row feed `ROWS·V` FMAs into
/// accumulators that stay in registers (6 × 2, 6 × 1 or a leftover row; the 4 × 3 tile
/// is `packed_tile_4x3!`).
macro_rules! packed_tile {
    ($name:ident, $features:literal, $t:ty, $w:literal, $load:ident, $store:ident, $fmadd:ident, $broadcast:ident, $zero:ident) => {
        #[target_feature(enable = $features)]
        pub(crate) unsafe fn $name<const ROWS: usize, const V: usize>(
            rows: [&[$t]; ROWS],
            packed: &[$t],
            stride: usize,
            range: std::ops::Range<usize>,
            acc: &mut [[$t; $w]],
        ) {
            assert!(rows.iter().all(|row| row.len() >= range.end));
            assert!(range.is_empty() || packed.len() >= (range.end - 1) * stride + V * $w);
            assert!(acc.len() >= ROWS * V);
            let mut registers = [[$zero(); V]; ROWS];
            for o in 0..ROWS {
                for v in 0..V {
                    // SAFETY: one SIMD vector from its lanes.
                    registers[o][v] = unsafe { $load(acc[o * V + v].as_ptr()) };
                }
            }
            for l in range {
                // SAFETY: l < range.end, within every row, and l·stride + V·width <=
                // packed.len() (asserted above).
                unsafe {
                    let column = packed.as_ptr().add(l * stride);
                    let mut x = [$zero(); V];
                    for v in 0..V {
                        x[v] = $load(column.add(v * $w));
                    }
                    for o in 0..ROWS {
                        let k = $broadcast(&*rows[o].as_ptr().add(l));
                        for v in 0..V {
                            registers[o][v] = $fmadd(k, x[v], registers[o][v]);
                        }
                    }
                }
            }
            for o in 0..ROWS {
                for v in 0..V {
                    // SAFETY: one SIMD vector into its lanes.
                    unsafe { $store(acc[o * V + v].as_mut_ptr(), registers[o][v]) };
                }
            }
        }
    };
}
/// Both types' tiles, compiled for `$features`.
macro_rules! packed_tiles {
    ($f64:ident, $f32:ident, $features:literal) => {
        packed_tile!(
            $f64,
            $features,
            f64,
            4,
            _mm256_loadu_pd,
            _mm256_storeu_pd,
            _mm256_fmadd_pd,
            _mm256_broadcast_sd,
            _mm256_setzero_pd
        );
        packed_tile!(
            $f32,
            $features,
            f32,
            8,
            _mm256_loadu_ps,
            _mm256_storeu_ps,
            _mm256_fmadd_ps,
            _mm256_broadcast_ss,
            _mm256_setzero_ps
        );
    };
}
packed_tiles!(packed_tile_f64, packed_tile_f32, "avx2,fma");
// The same tiles where AVX-512VL gives 256-bit code 32 registers instead of 16: room for
// 8 rows × 3 vectors of accumulators (24), each right-hand-side vector loaded then feeding
// twice the rows of the 4 × 3 tile.
packed_tiles!(
    packed_tile_512_f64,
    packed_tile_512_f32,
    "avx512f,avx512vl,avx2,fma"
);

/// The 4 × 3 tile of a wide pass ([`super::Dots::packed_tile`] with `ROWS = 4`,
/// `V = 3`): 12 accumulators, the column's 3 right-hand-side vectors and one broadcast
/// register, all 16. Each column's vectors, loaded once from the packed block, feed 12
/// FMAs instead of 9, so the tile reads a quarter less from L2 per FMA, which bounds the
/// 3 × 3 tile. In assembly because the compiler spills this tile with intrinsics (~1.4×
/// slower than 3 × 3). The same fused multiply-adds in the same order as the tiles of
/// `packed_tile!`.
macro_rules! packed_tile_4x3 {
    ($name:ident, $t:ty, $w:literal, $scalar:literal, $packed:literal, $size:literal, $bytes:literal, $load:ident, $store:ident, $zero:ident) => {
        #[target_feature(enable = "avx2,fma")]
        pub(crate) unsafe fn $name(
            rows: [&[$t]; 4],
            packed: &[$t],
            stride: usize,
            range: std::ops::Range<usize>,
            acc: &mut [[$t; $w]],
        ) {
            assert!(rows.iter().all(|row| row.len() >= range.end));
            assert!(range.is_empty() || packed.len() >= (range.end - 1) * stride + 3 * $w);
            assert!(acc.len() >= 12);
            if range.is_empty() {
                return;
            }
            let mut registers = [$zero(); 12];
            for (register, lanes) in registers.iter_mut().zip(acc.iter()) {
                // SAFETY: one SIMD vector from its lanes.
                *register = unsafe { $load(lanes.as_ptr()) };
            }
            // SAFETY: for l in range, rows[o][l] is in bounds and so are the three
            // vectors at packed[l·stride..] (asserted); the loop runs at least once
            // (range is not empty) and only reads memory.
            unsafe {
                std::arch::asm!(
                    "2:",
                    concat!("vmovu", $packed, " {x0}, ymmword ptr [{x}]"),
                    concat!("vmovu", $packed, " {x1}, ymmword ptr [{x} + 32]"),
                    concat!("vmovu", $packed, " {x2}, ymmword ptr [{x} + 64]"),
                    concat!("vbroadcast", $scalar, " {k}, ", $size, " ptr [{r0} + {l}*", $bytes, "]"),
                    concat!("vfmadd231", $packed, " {a00}, {k}, {x0}"),
                    concat!("vfmadd231", $packed, " {a01}, {k}, {x1}"),
                    concat!("vfmadd231", $packed, " {a02}, {k}, {x2}"),
                    concat!("vbroadcast", $scalar, " {k}, ", $size, " ptr [{r1} + {l}*", $bytes, "]"),
                    concat!("vfmadd231", $packed, " {a10}, {k}, {x0}"),
                    concat!("vfmadd231", $packed, " {a11}, {k}, {x1}"),
                    concat!("vfmadd231", $packed, " {a12}, {k}, {x2}"),
                    concat!("vbroadcast", $scalar, " {k}, ", $size, " ptr [{r2} + {l}*", $bytes, "]"),
                    concat!("vfmadd231", $packed, " {a20}, {k}, {x0}"),
                    concat!("vfmadd231", $packed, " {a21}, {k}, {x1}"),
                    concat!("vfmadd231", $packed, " {a22}, {k}, {x2}"),
                    concat!("vbroadcast", $scalar, " {k}, ", $size, " ptr [{r3} + {l}*", $bytes, "]"),
                    concat!("vfmadd231", $packed, " {a30}, {k}, {x0}"),
                    concat!("vfmadd231", $packed, " {a31}, {k}, {x1}"),
                    concat!("vfmadd231", $packed, " {a32}, {k}, {x2}"),
                    "add {x}, {step}",
                    "inc {l}",
                    "cmp {l}, {end}",
                    "jb 2b",
                    r0 = in(reg) rows[0].as_ptr(),
                    r1 = in(reg) rows[1].as_ptr(),
                    r2 = in(reg) rows[2].as_ptr(),
                    r3 = in(reg) rows[3].as_ptr(),
                    x = inout(reg) packed.as_ptr().add(range.start * stride) => _,
                    l = inout(reg) range.start => _,
                    end = in(reg) range.end,
                    step = in(reg) stride * std::mem::size_of::<$t>(),
                    k = out(ymm_reg) _,
                    x0 = out(ymm_reg) _,
                    x1 = out(ymm_reg) _,
                    x2 = out(ymm_reg) _,
                    a00 = inout(ymm_reg) registers[0],
                    a01 = inout(ymm_reg) registers[1],
                    a02 = inout(ymm_reg) registers[2],
                    a10 = inout(ymm_reg) registers[3],
                    a11 = inout(ymm_reg) registers[4],
                    a12 = inout(ymm_reg) registers[5],
                    a20 = inout(ymm_reg) registers[6],
                    a21 = inout(ymm_reg) registers[7],
                    a22 = inout(ymm_reg) registers[8],
                    a30 = inout(ymm_reg) registers[9],
                    a31 = inout(ymm_reg) registers[10],
                    a32 = inout(ymm_reg) registers[11],
                    options(nostack, readonly),
                );
            }
            for (register, lanes) in registers.iter().zip(acc.iter_mut()) {
                // SAFETY: one SIMD vector into its lanes.
                unsafe { $store(lanes.as_mut_ptr(), *register) };
            }
        }
    };
}
packed_tile_4x3!(
    packed_tile_4x3_f64,
    f64,
    4,
    "sd",
    "pd",
    "qword",
    "8",
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_setzero_pd
);
packed_tile_4x3!(
    packed_tile_4x3_f32,
    f32,
    8,
    "ss",
    "ps",
    "dword",
    "4",
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_setzero_ps
);

/// The tile of a combination (see [`super::Dots::combine_tile`]): `O·V` accumulators
/// (at most 5 × 2) with, per term, `V` loads of its piece and `O` broadcasts of its
/// coefficients, 13 of the 16 registers.
macro_rules! combine_tile {
    ($name:ident, $t:ty, $w:literal, $load:ident, $store:ident, $fnmadd:ident, $broadcast:ident, $zero:ident) => {
        #[target_feature(enable = "avx2,fma")]
        pub(crate) unsafe fn $name<const O: usize, const V: usize>(
            outs: &mut [&mut [$t]],
            vectors: &[&[$t]],
            coefficients: &[&[$t]],
            at: usize,
        ) {
            let end = at + V * $w;
            assert!(outs.len() == O && coefficients.len() == O);
            assert!(outs.iter().all(|out| out.len() >= end));
            assert!(vectors.iter().all(|vector| vector.len() >= end));
            assert!(coefficients.iter().all(|c| c.len() >= vectors.len()));
            let mut registers = [[$zero(); V]; O];
            for o in 0..O {
                for v in 0..V {
                    // SAFETY: at + (v + 1)·width <= end <= outs[o].len() (asserted).
                    registers[o][v] = unsafe { $load(outs[o].as_ptr().add(at + v * $w)) };
                }
            }
            for (r, vector) in vectors.iter().enumerate() {
                // SAFETY: the pieces end within every vector, and r < vectors.len() <=
                // every coefficients' length (asserted above).
                unsafe {
                    let mut x = [$zero(); V];
                    for v in 0..V {
                        x[v] = $load(vector.as_ptr().add(at + v * $w));
                    }
                    _mm_prefetch::<_MM_HINT_T0>(
                        vector.as_ptr().wrapping_add(at + PREFETCH_AHEAD) as *const i8
                    );
                    for o in 0..O {
                        let c = $broadcast(coefficients[o].get_unchecked(r));
                        for v in 0..V {
                            registers[o][v] = $fnmadd(c, x[v], registers[o][v]);
                        }
                    }
                }
            }
            for o in 0..O {
                for v in 0..V {
                    // SAFETY: as for the loads.
                    unsafe { $store(outs[o].as_mut_ptr().add(at + v * $w), registers[o][v]) };
                }
            }
        }
    };
}
combine_tile!(
    combine_tile_f64,
    f64,
    4,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_fnmadd_pd,
    _mm256_broadcast_sd,
    _mm256_setzero_pd
);
combine_tile!(
    combine_tile_f32,
    f32,
    8,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_fnmadd_ps,
    _mm256_broadcast_ss,
    _mm256_setzero_ps
);

/// The fused tile of a symmetric pass: each kernel element loaded feeds `R` FMAs of
/// the dot products and `R` of the transposed update, whose buffer is loaded and
/// stored once per `ROWS` of them (4 rows, for 1 to 4 right-hand sides).
macro_rules! symmetric_tile {
    ($name:ident, $t:ty, $w:literal, $load:ident, $store:ident, $fmadd:ident, $set1:ident, $zero:ident) => {
        #[target_feature(enable = "avx2,fma")]
        pub(crate) unsafe fn $name<const ROWS: usize, const R: usize>(
            rows: [&[$t]; ROWS],
            rhs: [&[$t]; R],
            coefficients: [[$t; R]; ROWS],
            range: std::ops::Range<usize>,
            acc: &mut [[$t; $w]],
            stride: usize,
            buffers: [&mut [$t]; R],
        ) {
            assert!(rows.iter().all(|row| row.len() >= range.end));
            assert!(rhs.iter().all(|x| x.len() >= range.end));
            assert!(buffers.iter().all(|b| b.len() >= range.len()));
            assert!(acc.len() >= (ROWS - 1) * stride + R);
            debug_assert_eq!(range.len() % $w, 0);
            let factors: [[_; R]; ROWS] =
                std::array::from_fn(|r| std::array::from_fn(|j| $set1(coefficients[r][j])));
            let mut registers = [[$zero(); R]; ROWS];
            for r in 0..ROWS {
                for j in 0..R {
                    // SAFETY: one SIMD vector from its lanes.
                    registers[r][j] = unsafe { $load(acc[r * stride + j].as_ptr()) };
                }
            }
            let mut l = range.start;
            while l < range.end {
                // SAFETY: l + width <= range.end, within every row and rhs, and
                // l − range.start + width <= range.len(), within every buffer.
                unsafe {
                    let mut k = [$zero(); ROWS];
                    for r in 0..ROWS {
                        k[r] = $load(rows[r].as_ptr().add(l));
                    }
                    for j in 0..R {
                        let x = $load(rhs[j].as_ptr().add(l));
                        let target = buffers[j].as_mut_ptr().add(l - range.start);
                        let mut value = $load(target);
                        for r in 0..ROWS {
                            registers[r][j] = $fmadd(k[r], x, registers[r][j]);
                            value = $fmadd(k[r], factors[r][j], value);
                        }
                        $store(target, value);
                    }
                }
                l += $w;
            }
            for r in 0..ROWS {
                for j in 0..R {
                    // SAFETY: one SIMD vector into its lanes.
                    unsafe { $store(acc[r * stride + j].as_mut_ptr(), registers[r][j]) };
                }
            }
        }
    };
}
symmetric_tile!(
    symmetric_tile_f64,
    f64,
    4,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_fmadd_pd,
    _mm256_set1_pd,
    _mm256_setzero_pd
);
symmetric_tile!(
    symmetric_tile_f32,
    f32,
    8,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_fmadd_ps,
    _mm256_set1_ps,
    _mm256_setzero_ps
);

/// [`super::Dots::row_statistics`] of `ROWS` rows side by side: the dot products of
/// each row with `[positive, negative, weight∘row]` ([`dots_f64`], [`dots_f32`]). Each
/// row's lanes take the same multiply-adds in the same order whatever `ROWS`, so its sums
/// are bit for bit those of one row alone. Compiled for AVX2 (one row at a time) and
/// where AVX-512VL gives 32 registers for the 24 accumulators of four rows, which keep
/// more reads of `K` in flight.
macro_rules! row_statistics {
    ($f64:ident, $f32:ident, $features:literal) => {
        #[target_feature(enable = $features)]
        pub(crate) unsafe fn $f64<const ROWS: usize>(
            rows: [&[f64]; ROWS],
            positive: &[f64],
            negative: &[f64],
            weight: &[f64],
        ) -> [[f64; 3]; ROWS] {
            let n = rows.first().map_or(0, |row| row.len());
            assert!(rows.iter().all(|row| row.len() == n));
            assert!(positive.len() >= n && negative.len() >= n && weight.len() >= n);
            let body = n - n % LANES;
            let mut low = [[_mm256_setzero_pd(); 3]; ROWS];
            let mut high = [[_mm256_setzero_pd(); 3]; ROWS];
            let mut i = 0;
            while i < body {
                // SAFETY: i + 8 <= body <= n, within every slice (asserted above).
                unsafe {
                    let (p, q, w) = (
                        positive.as_ptr().add(i),
                        negative.as_ptr().add(i),
                        weight.as_ptr().add(i),
                    );
                    for (o, row) in rows.iter().enumerate() {
                        let r0 = _mm256_loadu_pd(row.as_ptr().add(i));
                        let r1 = _mm256_loadu_pd(row.as_ptr().add(i + 4));
                        for (j, x) in [p, q].into_iter().enumerate() {
                            low[o][j] = _mm256_fmadd_pd(r0, _mm256_loadu_pd(x), low[o][j]);
                            high[o][j] = _mm256_fmadd_pd(r1, _mm256_loadu_pd(x.add(4)), high[o][j]);
                        }
                        let w0 = _mm256_mul_pd(_mm256_loadu_pd(w), r0);
                        let w1 = _mm256_mul_pd(_mm256_loadu_pd(w.add(4)), r1);
                        low[o][2] = _mm256_fmadd_pd(r0, w0, low[o][2]);
                        high[o][2] = _mm256_fmadd_pd(r1, w1, high[o][2]);
                    }
                }
                i += LANES;
            }
            let mut result = [[0.0; 3]; ROWS];
            for (o, row) in rows.iter().enumerate() {
                for j in 0..3 {
                    let mut lanes = [0.0f64; LANES];
                    // SAFETY: `lanes` holds exactly two 4-wide vectors.
                    unsafe {
                        _mm256_storeu_pd(lanes.as_mut_ptr(), low[o][j]);
                        _mm256_storeu_pd(lanes.as_mut_ptr().add(4), high[o][j]);
                    }
                    result[o][j] = with_tail(lanes, row, body, |l| {
                        [positive[l], negative[l], weight[l] * row[l]][j]
                    });
                }
            }
            result
        }

        #[target_feature(enable = $features)]
        pub(crate) unsafe fn $f32<const ROWS: usize>(
            rows: [&[f32]; ROWS],
            positive: &[f32],
            negative: &[f32],
            weight: &[f32],
        ) -> [[f32; 3]; ROWS] {
            let n = rows.first().map_or(0, |row| row.len());
            assert!(rows.iter().all(|row| row.len() == n));
            assert!(positive.len() >= n && negative.len() >= n && weight.len() >= n);
            let body = n - n % LANES;
            let mut acc = [[_mm256_setzero_ps(); 3]; ROWS];
            let mut i = 0;
            while i < body {
                // SAFETY: i + 8 <= body <= n, within every slice (asserted above).
                unsafe {
                    let p = _mm256_loadu_ps(positive.as_ptr().add(i));
                    let q = _mm256_loadu_ps(negative.as_ptr().add(i));
                    let w = _mm256_loadu_ps(weight.as_ptr().add(i));
                    for (o, row) in rows.iter().enumerate() {
                        let r = _mm256_loadu_ps(row.as_ptr().add(i));
                        acc[o][0] = _mm256_fmadd_ps(r, p, acc[o][0]);
                        acc[o][1] = _mm256_fmadd_ps(r, q, acc[o][1]);
                        acc[o][2] = _mm256_fmadd_ps(r, _mm256_mul_ps(w, r), acc[o][2]);
                    }
                }
                i += LANES;
            }
            let mut result = [[0.0; 3]; ROWS];
            for (o, row) in rows.iter().enumerate() {
                for j in 0..3 {
                    let mut lanes = [0.0f32; LANES];
                    // SAFETY: `lanes` holds exactly one 8-wide vector.
                    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc[o][j]) };
                    result[o][j] = with_tail(lanes, row, body, |l| {
                        [positive[l], negative[l], weight[l] * row[l]][j]
                    });
                }
            }
            result
        }
    };
}
row_statistics!(row_statistics_f64, row_statistics_f32, "avx2,fma");
row_statistics!(
    row_statistics_512_f64,
    row_statistics_512_f32,
    "avx512f,avx512vl,avx2,fma"
);

/// Eight f64 partial sums per right-hand side in two 4-wide registers.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn dots_f64<const R: usize>(row: &[f64], rhs: [&[f64]; R]) -> [f64; R] {
    let n = row.len();
    let body = n - n % LANES;
    let mut low = [_mm256_setzero_pd(); R];
    let mut high = [_mm256_setzero_pd(); R];
    let mut i = 0;
    while i < body {
        // SAFETY: i + 8 <= body <= n, and every rhs has length n.
        unsafe {
            let r0 = _mm256_loadu_pd(row.as_ptr().add(i));
            let r1 = _mm256_loadu_pd(row.as_ptr().add(i + 4));
            for j in 0..R {
                let x = rhs[j].as_ptr().add(i);
                low[j] = _mm256_fmadd_pd(r0, _mm256_loadu_pd(x), low[j]);
                high[j] = _mm256_fmadd_pd(r1, _mm256_loadu_pd(x.add(4)), high[j]);
            }
        }
        i += LANES;
    }
    let mut result = [0.0; R];
    for j in 0..R {
        let mut lanes = [0.0f64; LANES];
        // SAFETY: `lanes` holds exactly two 4-wide vectors.
        unsafe {
            _mm256_storeu_pd(lanes.as_mut_ptr(), low[j]);
            _mm256_storeu_pd(lanes.as_mut_ptr().add(4), high[j]);
        }
        result[j] = with_tail(lanes, row, body, |l| rhs[j][l]);
    }
    result
}

/// Eight f32 partial sums per right-hand side in one 8-wide register.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn dots_f32<const R: usize>(row: &[f32], rhs: [&[f32]; R]) -> [f32; R] {
    let n = row.len();
    let body = n - n % LANES;
    let mut acc = [_mm256_setzero_ps(); R];
    let mut i = 0;
    while i < body {
        // SAFETY: i + 8 <= body <= n, and every rhs has length n.
        unsafe {
            let r = _mm256_loadu_ps(row.as_ptr().add(i));
            for j in 0..R {
                acc[j] = _mm256_fmadd_ps(r, _mm256_loadu_ps(rhs[j].as_ptr().add(i)), acc[j]);
            }
        }
        i += LANES;
    }
    let mut result = [0.0; R];
    for j in 0..R {
        let mut lanes = [0.0f32; LANES];
        // SAFETY: `lanes` holds exactly one 8-wide vector.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc[j]) };
        result[j] = with_tail(lanes, row, body, |l| rhs[j][l]);
    }
    result
}
