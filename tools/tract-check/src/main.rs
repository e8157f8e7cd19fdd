//! Runs every ONNX graph that `.ci/export_onnx.py` wrote in tract, and compares its outputs
//! with the estimators' own (`expected.json` beside the graphs).
//!
//!     cargo run --release -- DIR

use std::path::Path;
use tract_onnx::prelude::*;

fn main() -> TractResult<()> {
    let directory = std::env::args()
        .nth(1)
        .expect("usage: gkfda-tract-check DIR");
    let directory = Path::new(&directory);
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(directory.join("expected.json"))?)?;
    let mut failures = 0;
    let cases = expected["cases"].as_array().expect("cases");
    for case in cases {
        let name = case["file"].as_str().expect("file");
        let rows: Vec<Vec<f64>> = serde_json::from_value(case["X"].clone())?;
        let (n, d) = (rows.len(), rows[0].len());
        let float32 = case["dtype"] == "float32";
        let flat: Vec<f64> = rows.into_iter().flatten().collect();
        let input: Tensor = if float32 {
            tract_ndarray::Array2::from_shape_vec((n, d), flat.iter().map(|&v| v as f32).collect())?
                .into()
        } else {
            tract_ndarray::Array2::from_shape_vec((n, d), flat)?.into()
        };
        let run = || -> TractResult<Vec<f64>> {
            let model = tract_onnx::onnx()
                .model_for_path(directory.join(name))?
                .with_input_fact(0, InferenceFact::dt_shape(input.datum_type(), tvec!(n, d)))?
                .into_optimized()?
                .into_runnable()?;
            let outputs = model.run(tvec!(input.clone().into()))?;
            let output =
                outputs[case["output"].as_u64().expect("output") as usize].cast_to::<f64>()?;
            Ok(output.as_slice::<f64>()?.to_vec())
        };
        let got = match run() {
            Ok(values) => values,
            Err(error) => {
                println!("{name}: tract failed: {error:#}  FAILED");
                failures += 1;
                continue;
            }
        };
        let want: Vec<f64> = serde_json::from_value(case["values"].clone())?;
        let tolerance = case["tolerance"].as_f64().expect("tolerance");
        let worst = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        let ok = got.len() == want.len() && worst <= tolerance;
        println!(
            "{name}: max abs difference {worst:.1e} (tolerance {tolerance:.0e}){}",
            if ok { "" } else { "  FAILED" }
        );
        failures += usize::from(!ok);
    }
    println!(
        "{} outputs of gkfda's graphs compared in tract, {failures} failures",
        cases.len()
    );
    if failures > 0 {
        std::process::exit(1);
    }
    Ok(())
}
