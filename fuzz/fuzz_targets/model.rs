//! `Model::from_bytes`, then a prediction of fixed rows when it loads: both must return
//! `Ok` or `Err`, never panic.
//!
//! Most inputs are read as edits of a valid model file (one of tests/data/models): fields
//! of the metadata JSON replaced by other values (huge, negative, fractional integers,
//! non-finite spellings, strings, arrays, objects), keys dropped or written twice, the
//! predictor's dimensions changed together with its tensors' shapes, tensors' shapes,
//! dtypes, values and offsets changed, tensors dropped or added, bytes appended. The file
//! is then written again and sealed (its checksum recomputed), so that what is fuzzed is
//! the checks behind the checksum. The other inputs are taken as the file's bytes (and
//! those bytes resealed).
#![no_main]

use arbitrary::{Result, Unstructured};
use gkfda::{Model, Task};
use gkfda_fuzz::{one_in, real};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Map, Number, Value};

const BASES: [&[u8]; 10] = [
    include_bytes!("../../tests/data/models/greedy_binary_rbf_lean.gkfda"),
    include_bytes!("../../tests/data/models/greedy_binary_f32.gkfda"),
    include_bytes!("../../tests/data/models/greedy_ovr_3class.gkfda"),
    include_bytes!("../../tests/data/models/greedy_poly.gkfda"),
    include_bytes!("../../tests/data/models/greedy_precomputed.gkfda"),
    include_bytes!("../../tests/data/models/kcca.gkfda"),
    include_bytes!("../../tests/data/models/kmp.gkfda"),
    include_bytes!("../../tests/data/models/kpca_f32.gkfda"),
    include_bytes!("../../tests/data/models/nystroem.gkfda"),
    include_bytes!("../../tests/data/models/parsimonious_binary.gkfda"),
];

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    if one_in(&mut u, 8).unwrap_or(false) {
        let bytes = u.take_rest();
        run(bytes);
        let mut sealed = bytes.to_vec();
        if gkfda::model::seal(&mut sealed).is_ok() {
            run(&sealed);
        }
        return;
    }
    let Ok(base) = u.choose(&BASES) else {
        return;
    };
    let mut file = File::parse(base);
    let mut edited = false;
    while !u.is_empty() && !one_in(&mut u, 6).unwrap_or(true) {
        if file.edit(&mut u).is_err() {
            break;
        }
        edited = true;
    }
    let bytes = file.write();
    let result = run(&bytes);
    assert!(edited || result, "an unedited fixture must load");
});

/// A model file taken apart: its metadata and its tensors, in the order of their data.
struct File {
    meta: Value,
    tensors: Vec<Tensor>,
    /// Paths of objects (in `meta`) and keys in them to write twice.
    twice: Vec<(Vec<String>, String)>,
    /// A tensor whose entry gets an extra key, a header key written twice.
    extra_entry_key: Option<usize>,
    header_key_twice: Option<usize>,
    /// Added to the begin and end offsets of one tensor.
    skew: Option<(usize, i64, i64)>,
    trailing: Vec<u8>,
}

struct Tensor {
    name: String,
    dtype: String,
    shape: Vec<u64>,
    data: Vec<u8>,
}

/// Dimension values that break arithmetic, then small ones.
const SIZES: [u64; 14] = [
    0,
    1,
    2,
    3,
    (1 << 31) - 1,
    1 << 31,
    1 << 32,
    1 << 53,
    (1 << 53) + 1,
    1 << 62,
    (1 << 63) - 1,
    (1 << 63) + 5,
    u64::MAX - 1,
    u64::MAX,
];

const WORDS: [&str; 28] = [
    "",
    "nan",
    "NaN",
    "inf",
    "-Infinity",
    "\u{0}",
    "a\u{0}",
    "\u{ffff}",
    "float32",
    "float64",
    "rbf",
    "poly",
    "linear",
    "precomputed",
    "classifier",
    "regressor",
    "transformer",
    "logistic",
    "softmax",
    "ovr",
    "identity",
    "int",
    "float",
    "bool",
    "str",
    "__tensor__",
    "state.x",
    "predict.weights",
];

const DTYPES: [&str; 9] = [
    "F64", "F32", "I64", "BOOL", "U8", "I32", "F16", "BF16", "U64",
];

fn itemsize(dtype: &str) -> u64 {
    match dtype {
        "F64" | "I64" | "U64" => 8,
        "F32" | "I32" => 4,
        "F16" | "BF16" => 2,
        _ => 1,
    }
}

fn size(u: &mut Unstructured) -> Result<u64> {
    Ok(if one_in(u, 3)? {
        *u.choose(&SIZES)?
    } else {
        u.int_in_range(0..=6)?
    })
}

/// An integer as JSON: an edge of some integer type, or small.
fn integer(u: &mut Unstructured) -> Result<Value> {
    Ok(match u.int_in_range(0u8..=4)? {
        0 => json!(*u.choose(&SIZES)?),
        1 => json!(-(u.int_in_range(0i64..=3)?)),
        2 => json!(i64::MIN),
        3 => json!(u.arbitrary::<i64>()?),
        _ => json!(u.int_in_range(0u64..=8)?),
    })
}

/// Any JSON value, often one a field of the format might hold.
fn value(u: &mut Unstructured, depth: u32) -> Result<Value> {
    Ok(match u.int_in_range(0u8..=11)? {
        0 | 1 => integer(u)?,
        2 => Number::from_f64(real(u)?).map_or(json!("NaN"), Value::Number),
        // An integer written as a float: 2.0, 9.2e18.
        3 => json!(u.choose(&SIZES)?.to_owned() as f64),
        4 | 5 => json!(*u.choose(&WORDS)?),
        6 => {
            let text: String = u.arbitrary()?;
            json!(text.chars().take(12).collect::<String>())
        }
        7 => json!(u.arbitrary::<bool>()?),
        8 => Value::Null,
        9 if depth < 3 => {
            let n = u.int_in_range(0..=4)?;
            Value::Array((0..n).map(|_| value(u, depth + 1)).collect::<Result<_>>()?)
        }
        10 if depth < 3 => {
            let kind = *u.choose(&["int", "float", "bool", "str", "complex"])?;
            let n = u.int_in_range(0..=4)?;
            let values = (0..n)
                .map(|_| value(u, depth + 1))
                .collect::<Result<Vec<_>>>()?;
            json!({"kind": kind, "values": values})
        }
        _ => json!({}),
    })
}

/// A path to a node of `root`: mostly into the predictor.
fn path(u: &mut Unstructured, root: &Value) -> Result<Vec<String>> {
    let mut path = Vec::new();
    let mut node = root;
    if let Some(predictor) = root.get("predictor") {
        if !one_in(u, 3)? {
            path.push("predictor".to_string());
            node = predictor;
        }
    }
    loop {
        let next = match node {
            Value::Object(map) if !map.is_empty() => {
                let (key, child) = map
                    .iter()
                    .nth(u.choose_index(map.len())?)
                    .expect("in range");
                (key.clone(), child)
            }
            Value::Array(items) if !items.is_empty() => {
                let i = u.choose_index(items.len())?;
                (i.to_string(), &items[i])
            }
            _ => return Ok(path),
        };
        path.push(next.0);
        node = next.1;
        if !node.is_object() && !node.is_array() || one_in(u, 3)? {
            return Ok(path);
        }
    }
}

fn node_mut<'a>(root: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    path.iter().try_fold(root, |node, key| match node {
        Value::Object(map) => map.get_mut(key),
        Value::Array(items) => items.get_mut(key.parse::<usize>().ok()?),
        _ => None,
    })
}

impl File {
    fn parse(bytes: &[u8]) -> File {
        let n = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
        let header: Map<String, Value> =
            serde_json::from_slice(&bytes[8..8 + n]).expect("a fixture's header");
        let data = &bytes[8 + n..];
        let meta = serde_json::from_str(header["__metadata__"]["gkfda"].as_str().expect("text"))
            .expect("a fixture's metadata");
        let mut tensors: Vec<(u64, Tensor)> = header
            .iter()
            .filter(|(name, _)| *name != "__metadata__")
            .map(|(name, entry)| {
                let offsets = &entry["data_offsets"];
                let (begin, end) = (offsets[0].as_u64().unwrap(), offsets[1].as_u64().unwrap());
                let tensor = Tensor {
                    name: name.clone(),
                    dtype: entry["dtype"].as_str().unwrap().to_string(),
                    shape: entry["shape"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|s| s.as_u64().unwrap())
                        .collect(),
                    data: data[begin as usize..end as usize].to_vec(),
                };
                (begin, tensor)
            })
            .collect();
        tensors.sort_by_key(|(begin, _)| *begin);
        File {
            meta,
            tensors: tensors.into_iter().map(|(_, t)| t).collect(),
            twice: Vec::new(),
            extra_entry_key: None,
            header_key_twice: None,
            skew: None,
            trailing: Vec::new(),
        }
    }

    fn tensor(&mut self, name: &str) -> Option<&mut Tensor> {
        self.tensors.iter_mut().find(|t| t.name == name)
    }

    fn edit(&mut self, u: &mut Unstructured) -> Result<()> {
        match u.int_in_range(0u8..=13)? {
            0..=3 => {
                let path = path(u, &self.meta)?;
                let new = value(u, 0)?;
                if let Some(node) = node_mut(&mut self.meta, &path) {
                    *node = new;
                }
            }
            4 => {
                let path = path(u, &self.meta)?;
                if let Some((key, parent)) = path.split_last() {
                    match node_mut(&mut self.meta, parent) {
                        Some(Value::Object(map)) => {
                            map.remove(key);
                        }
                        Some(Value::Array(items)) => {
                            if let Ok(i) = key.parse::<usize>() {
                                items.remove(i);
                            }
                        }
                        _ => {}
                    }
                }
            }
            5 => {
                let path = path(u, &self.meta)?;
                if let Some((key, parent)) = path.split_last() {
                    self.twice.push((parent.to_vec(), key.clone()));
                }
            }
            // The predictor's dimension and its tensors' matching axes, changed together.
            6 | 7 => self.set_dimension(u)?,
            8 => {
                let t = u.choose_index(self.tensors.len())?;
                let rank = u.int_in_range(0..=5)?;
                let shape = (0..rank).map(|_| size(u)).collect::<Result<Vec<_>>>()?;
                let tensor = &mut self.tensors[t];
                // Resized to fit when that is small; otherwise the shape lies.
                let elements = shape.iter().try_fold(1u64, |a, &b| a.checked_mul(b));
                if let Some(bytes) = elements.and_then(|e| e.checked_mul(itemsize(&tensor.dtype))) {
                    if bytes <= 1 << 14 && !one_in(u, 4)? {
                        tensor.data.resize(bytes as usize, 0);
                    }
                }
                tensor.shape = shape;
            }
            9 => {
                let t = u.choose_index(self.tensors.len())?;
                self.tensors[t].dtype = u.choose(&DTYPES)?.to_string();
            }
            10 => {
                let t = u.choose_index(self.tensors.len())?;
                let tensor = &mut self.tensors[t];
                if tensor.data.len() >= 8 && tensor.name != "checksum" {
                    let at = u.choose_index(tensor.data.len() - 7)?;
                    let bits = match u.int_in_range(0u8..=2)? {
                        0 => real(u)?.to_le_bytes(),
                        1 => u.arbitrary::<i64>()?.to_le_bytes(),
                        _ => (-(u.int_in_range(0i64..=2)?)).to_le_bytes(),
                    };
                    tensor.data[at..at + 8].copy_from_slice(&bits);
                }
            }
            11 => {
                let t = u.choose_index(self.tensors.len())?;
                if one_in(u, 2)? {
                    self.tensors.remove(t);
                } else {
                    let name = u
                        .choose(&[
                            "predict.lower",
                            "predict.center",
                            "predict.slope",
                            "state.x",
                        ])?
                        .to_string();
                    let tensor = &self.tensors[t];
                    let copy = Tensor {
                        name,
                        dtype: tensor.dtype.clone(),
                        shape: tensor.shape.clone(),
                        data: tensor.data.clone(),
                    };
                    self.tensors.push(copy);
                }
            }
            12 => match u.int_in_range(0u8..=2)? {
                0 => self.extra_entry_key = Some(u.choose_index(self.tensors.len())?),
                1 => self.header_key_twice = Some(u.choose_index(self.tensors.len())?),
                _ => {
                    let t = u.choose_index(self.tensors.len())?;
                    self.skew = Some((t, u.int_in_range(-9..=9)?, u.int_in_range(-9..=9)?));
                }
            },
            _ => {
                let n = u.int_in_range(1..=16)?;
                self.trailing.extend(std::iter::repeat_n(0u8, n));
            }
        }
        Ok(())
    }

    /// `n_features`, `n_bases` or `n_outputs` set to `n`, and the axes of the predictor's
    /// tensors that hold it; their data resized when that is small (else left as it was).
    fn set_dimension(&mut self, u: &mut Unstructured) -> Result<()> {
        let key = *u.choose(&["n_bases", "n_features", "n_outputs"])?;
        let n = size(u)?;
        let old = |file: &File, key: &str| file.meta["predictor"][key].as_u64();
        let (Some(k), Some(d), Some(c)) = (
            old(self, "n_bases"),
            old(self, "n_features"),
            old(self, "n_outputs"),
        ) else {
            return Ok(());
        };
        let (k, d, c) = match key {
            "n_bases" => (n, d, c),
            "n_features" => (k, n, c),
            _ => (k, d, n),
        };
        self.meta["predictor"][key] = json!(n);
        let precomputed = self.meta["predictor"]["kernel"] == "precomputed";
        let shapes: [(&str, Vec<u64>); 7] = [
            (
                if precomputed {
                    "predict.columns"
                } else {
                    "predict.points"
                },
                if precomputed { vec![k] } else { vec![k, d] },
            ),
            ("predict.weights", vec![k, c]),
            ("predict.bias", vec![c]),
            ("predict.lower", vec![k, k]),
            ("predict.center", vec![k]),
            ("predict.slope", vec![c]),
            ("predict.offset", vec![c]),
        ];
        for (name, shape) in shapes {
            let Some(tensor) = self.tensor(name) else {
                continue;
            };
            let bytes = shape
                .iter()
                .try_fold(itemsize(&tensor.dtype), |a, &b| a.checked_mul(b));
            if let Some(bytes) = bytes.filter(|&b| b <= 1 << 16) {
                tensor.data.resize(bytes as usize, 0);
            }
            tensor.shape = shape;
        }
        Ok(())
    }

    fn write(&self) -> Vec<u8> {
        let mut metadata = String::new();
        write_json(&self.meta, &mut Vec::new(), &self.twice, &mut metadata);
        let mut header = String::from("{\"__metadata__\":{\"gkfda\":");
        header.push_str(&Value::String(metadata).to_string());
        header.push('}');
        let mut offset = 0u64;
        for (i, tensor) in self.tensors.iter().enumerate() {
            let (mut begin, mut end) = (offset, offset + tensor.data.len() as u64);
            offset = end;
            if let Some((t, b, e)) = self.skew {
                if t == i {
                    begin = begin.saturating_add_signed(b);
                    end = end.saturating_add_signed(e);
                }
            }
            let mut entry = json!({
                "dtype": tensor.dtype, "shape": tensor.shape, "data_offsets": [begin, end]
            });
            if self.extra_entry_key == Some(i) {
                entry["extra"] = json!(1);
            }
            let name = Value::String(tensor.name.clone()).to_string();
            header.push_str(&format!(",{name}:{entry}"));
            if self.header_key_twice == Some(i) {
                header.push_str(&format!(",{name}:{entry}"));
            }
        }
        header.push('}');
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend(header.as_bytes());
        for tensor in &self.tensors {
            bytes.extend(&tensor.data);
        }
        bytes.extend(&self.trailing);
        let _ = gkfda::model::seal(&mut bytes);
        bytes
    }
}

/// `value` as JSON text, with the keys of `twice` (object path, key) written twice.
fn write_json(
    value: &Value,
    path: &mut Vec<String>,
    twice: &[(Vec<String>, String)],
    out: &mut String,
) {
    match value {
        Value::Object(map) => {
            out.push('{');
            let mut first = true;
            for (key, child) in map {
                let times = 1 + usize::from(twice.iter().any(|(p, k)| p == path && k == key));
                for _ in 0..times {
                    if !first {
                        out.push(',');
                    }
                    first = false;
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push(':');
                    path.push(key.clone());
                    write_json(child, path, twice, out);
                    path.pop();
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, child) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                path.push(i.to_string());
                write_json(child, path, twice, out);
                path.pop();
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Loads `bytes` and, if they load, predicts: whether they loaded.
fn run(bytes: &[u8]) -> bool {
    let Ok(model) = Model::from_bytes(bytes) else {
        return false;
    };
    let d = model.n_features();
    // A model's rows can be as wide as any count the file claims.
    if d > 1 << 16 {
        return true;
    }
    let row: Vec<f64> = (0..d).map(|j| (j % 5) as f64 * 0.5 - 1.0).collect();
    let rows: Vec<f64> = row.iter().chain(&row).copied().collect();
    for (x, n) in [(&row, 1), (&rows, 2)] {
        let outputs = match model.task() {
            Task::Classifier => {
                let p = model.predict_proba(x, n);
                if let Ok(p) = &p {
                    assert_eq!(p.len(), n * model.n_classes());
                    assert!(p.iter().all(|v| v.is_finite() && *v >= 0.0 && *v <= 1.0));
                    let labels = model.predict(x, n).expect("predict as predict_proba");
                    assert!(labels.iter().all(|&c| c < model.n_classes()));
                }
                model.decision_function(x, n)
            }
            Task::Regressor => model.decision_function(x, n),
            Task::Transformer => model.transform(x, n),
        };
        if let Ok(z) = outputs {
            assert_eq!(z.len(), n * model.n_outputs());
            assert!(z.iter().all(|v| v.is_finite()));
        }
    }
    true
}
