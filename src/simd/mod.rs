//! The engine's SIMD kernels, and which instruction sets it runs them on: the best the CPU
//! offers, unless the environment variable `GKFDA_SIMD` caps it.
//!
//! The kernels are one catalogue, the [`Dots`] trait, implemented for `f32` and `f64`: each
//! method dispatches to its AVX-512 (`avx512`), AVX2 and FMA (`avx2`) or portable
//! (`portable`) body; the bodies that their documentation says match give the same sums
//! bit for bit (`tests`). The module knows nothing of the passes or of `Real`; `exp` holds
//! the vector `exp` of the RBF kernel.
//!
//! The code paths differ in the last bits of their sums (a pass with 2 to 6 right-hand
//! sides takes AVX-512's wide symmetric tiles there, and otherwise the narrow symmetric
//! tiles for 2 to 4 and full rows for 5 and 6; machines without AVX2 and FMA run portable
//! code and `f64::exp`). The cap lets one machine run the paths of another: CI on an
//! AVX-512 machine tests the AVX2 and portable paths end to end, and a user reproduces, bit
//! for bit, the selection values of a machine without AVX-512. The cap only ever lowers
//! the level, so no instruction runs that the CPU lacks.
//!
//! ```
//! use gkfda::simd::{simd_level, SimdLevel};
//!
//! assert_eq!(SimdLevel::from_name("avx2"), Some(SimdLevel::Avx2));
//! assert_eq!(SimdLevel::from_name("sse"), None);
//! assert!(simd_level() <= SimdLevel::detected());
//! ```

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod dots;
pub(crate) mod exp;
mod portable;
#[cfg(test)]
mod tests;

pub use dots::{dots, Dots};

use std::sync::OnceLock;

/// The environment variable that caps the level: `avx512` (no cap), `avx2` or `none`.
pub const SIMD_VARIABLE: &str = "GKFDA_SIMD";

/// An instruction-set level of the engine's tiles, from the lowest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SimdLevel {
    /// Portable Rust: every CPU, and the only path off x86-64.
    Portable,
    /// AVX2 and FMA: 256-bit tiles with 16 registers.
    Avx2,
    /// AVX-512F and AVX-512VL as well: taller tiles (32 registers) and wide symmetric passes.
    Avx512,
}

impl SimdLevel {
    /// Every level, from the lowest.
    pub const ALL: [SimdLevel; 3] = [SimdLevel::Portable, SimdLevel::Avx2, SimdLevel::Avx512];

    /// The level's name in `GKFDA_SIMD`: `none`, `avx2` or `avx512`.
    pub fn name(self) -> &'static str {
        match self {
            SimdLevel::Portable => "none",
            SimdLevel::Avx2 => "avx2",
            SimdLevel::Avx512 => "avx512",
        }
    }

    /// The level named `name` (as [`SimdLevel::name`] gives it), or `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|level| level.name() == name)
    }

    /// The highest level this CPU supports, whatever the cap.
    pub fn detected() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            let fma = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
            let avx512 =
                is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vl");
            match (fma, avx512) {
                (true, true) => SimdLevel::Avx512,
                (true, false) => SimdLevel::Avx2,
                _ => SimdLevel::Portable,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        SimdLevel::Portable
    }

    /// The cap a value of `GKFDA_SIMD` asks for: none when unset, empty or not a level's
    /// name (the Python package warns about such a value when imported).
    pub fn cap_from(value: Option<&str>) -> Option<Self> {
        value.and_then(Self::from_name)
    }
}

/// The level the engine runs at: [`SimdLevel::detected`], capped by `GKFDA_SIMD` as the
/// process first asked (read once: every pass of a process takes the same path, so results
/// do not depend on when the variable is changed).
pub fn simd_level() -> SimdLevel {
    static LEVEL: OnceLock<SimdLevel> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        let value = std::env::var(SIMD_VARIABLE).ok();
        let detected = SimdLevel::detected();
        SimdLevel::cap_from(value.as_deref()).map_or(detected, |cap| detected.min(cap))
    })
}

/// Called before each portable kernel: on a CPU with AVX, clears the upper halves of the
/// vector registers. Code that ran earlier on the thread, outside these kernels, can leave
/// them in use (XINUSE showed the YMM and ZMM uppers in use when a fit's first portable tile
/// began); while they are, every switch between the portable code's SSE instructions and the
/// VEX-encoded `fma` that `mul_add` calls costs a state transition: 150 ns a multiply-add
/// instead of 4.
#[inline]
pub(crate) fn enter_portable() {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX (checked just above).
        unsafe { zero_upper() }
    }
}

/// `vzeroupper`, in a function of its own that is never inlined: every vector register is
/// caller-saved, so no caller holds a value in their upper halves across the call.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
#[inline(never)]
unsafe fn zero_upper() {
    // SAFETY: the caller checked AVX; the instruction touches no memory and no flag, and
    // the registers it zeroes the upper halves of are declared clobbered.
    unsafe {
        std::arch::asm!(
            "vzeroupper",
            out("ymm0") _, out("ymm1") _, out("ymm2") _, out("ymm3") _,
            out("ymm4") _, out("ymm5") _, out("ymm6") _, out("ymm7") _,
            out("ymm8") _, out("ymm9") _, out("ymm10") _, out("ymm11") _,
            out("ymm12") _, out("ymm13") _, out("ymm14") _, out("ymm15") _,
            options(nomem, nostack, preserves_flags),
        )
    }
}

/// Whether the tiles run on AVX2 and FMA ([`simd_level`]: the CPU's, capped by
/// `GKFDA_SIMD`; an atomic load once known).
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_fma() -> bool {
    simd_level() >= SimdLevel::Avx2
}

/// Whether the wide symmetric tiles and the tall packed tiles run on AVX-512 (AVX-512VL:
/// 32 registers for 256-bit code too). Without it the wide symmetric tiles' portable twin
/// gives the same sums bit for bit but is too slow to pay: wide passes then read full rows.
pub(crate) fn has_avx512() -> bool {
    simd_level() == SimdLevel::Avx512
}
