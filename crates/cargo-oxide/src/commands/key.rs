//! `cargo oxide key [BUILD OPTIONS]`: the key of what `cargo oxide build` with the same
//! options would write in this environment, and the cache folder, as one JSON object
//! ([`KeyReport`]). Builds nothing. pyoxide's cache (`pyoxide.load`) asks this instead of
//! re-deriving it, so the two agree on the toolchain and on the cache folder.
//!
//! The key hashes every input that changes an artifact:
//! - the toolchain as `build` resolves it: each piece's path and version, libdevice's
//!   sha256, cargo's and this cargo-oxide's identity (the sysroot follows from rustc);
//! - the options that change artifacts (`oxide_abi::inputs::BUILD_OPTIONS`);
//! - the value of every variable whose effect is `Key` (`oxide_abi::inputs::VARIABLES`);
//! - the cargo config files cargo reads for the crate (what HOME and CARGO_HOME resolve
//!   to), by content.
//!
//! A missing toolchain piece does not fail the key (its message is hashed instead): the
//! build that follows reports it.
//!
//! Finding the toolchain runs a dozen programs (a Python among them), so what it found is
//! kept in the cache folder (`keys/`), by the value of every variable discovery reads
//! ([`DISCOVERY_VARIABLES`]), together with the identity (size, modification time) of
//! every file and folder it looked at, and reused while all of those are unchanged, as
//! cargo reuses a build while its inputs' times are. The rest of the key is cheap and
//! computed every time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use oxide_abi::report::KeyReport;

use crate::cli::{BuildArgs, CrateArgs};
use crate::env::Variable;
use crate::fsutil::{file_identity, sha256_file, sha256_hex};
use crate::toolchain::Discovery;
use crate::{env, exit};

/// The variables toolchain discovery reads (`toolchain.rs`; a test keeps the two in step).
pub const DISCOVERY_VARIABLES: [Variable; 10] = [
    env::RUSTC,
    env::CARGO,
    env::LLVM_BIN,
    env::LIBDEVICE,
    env::PTXAS,
    env::PYTHON,
    env::CUDA_HOME,
    env::CUDA_PATH,
    env::PATH,
    oxide_abi::inputs::HOME,
];

pub fn run(args: &BuildArgs) -> i32 {
    for arch in &args.arch {
        if let Err(e) = crate::ptx::parse_arch(arch.trim()) {
            return super::fail(&e.context(exit::Code(exit::USAGE)));
        }
    }
    match report(args) {
        Ok(report) => {
            println!("{}", report.to_json());
            exit::OK
        }
        Err(e) => super::fail(&e),
    }
}

fn report(args: &BuildArgs) -> Result<KeyReport> {
    let cache_dir = exit::coded(env::cache_dir_unchecked(), exit::USAGE)?;
    // A cache folder that cannot be used is reported as data (pyoxide turns it into its
    // configuration error), and nothing is kept in it.
    let cache_error = env::private_dir(&cache_dir).err().map(|e| format!("{e:#}"));
    let mut inputs = match &cache_error {
        None => discovered(&cache_dir)?,
        Some(_) => toolchain_inputs().0,
    };
    let crate_dir = option_inputs(args, &mut inputs)?;
    for (name, value) in env::keyed() {
        inputs.insert(format!("env {name}"), value);
    }
    for config in cargo_config_candidates(&crate_dir) {
        if config.is_file() {
            let digest = sha256_file(&config).unwrap_or_else(|_| "unreadable".into());
            inputs.insert(format!("cargo config {}", config.display()), digest);
        }
    }
    let key = sha256_hex(serde_json::to_string(&inputs)?.as_bytes());
    Ok(KeyReport {
        key,
        cache_dir,
        cache_error,
        inputs,
    })
}

/// What discovery finds, from the memo when nothing it depends on changed.
fn discovered(cache_dir: &Path) -> Result<BTreeMap<String, String>> {
    let variables: Vec<(&str, String)> = DISCOVERY_VARIABLES
        .iter()
        .map(|v| {
            let value = std::env::var_os(v.name).unwrap_or_default();
            (v.name, value.to_string_lossy().into_owned())
        })
        .collect();
    let me = std::env::current_exe()?;
    let identity = format!("{variables:?}\n{} {}", me.display(), identity_of(&me));
    let dir = cache_dir.join("keys");
    env::private_dir(&dir)?;
    let memo = dir.join(format!("{}.json", &sha256_hex(identity.as_bytes())[..32]));
    if let Some(inputs) = reuse(&memo) {
        return Ok(inputs);
    }
    let (inputs, watched) = toolchain_inputs();
    remember(&memo, &inputs, &watched);
    Ok(inputs)
}

/// A path's identity for the memo: kind, size and modification time, or "absent".
fn identity_of(path: &Path) -> String {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => format!("dir {}", file_identity(path)),
        Ok(_) => format!("file {}", file_identity(path)),
        Err(_) => "absent".into(),
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Memo {
    inputs: BTreeMap<String, String>,
    watched: BTreeMap<PathBuf, String>,
}

fn reuse(memo: &Path) -> Option<BTreeMap<String, String>> {
    let memo: Memo = serde_json::from_str(&std::fs::read_to_string(memo).ok()?).ok()?;
    let unchanged = memo
        .watched
        .iter()
        .all(|(path, identity)| identity_of(path) == *identity);
    unchanged.then_some(memo.inputs)
}

/// Keep the answer for the next call (a failure to write only costs that call time).
fn remember(memo: &Path, inputs: &BTreeMap<String, String>, watched: &[PathBuf]) {
    let value = Memo {
        inputs: inputs.clone(),
        watched: watched
            .iter()
            .map(|p| (p.clone(), identity_of(p)))
            .collect(),
    };
    if let Ok(text) = serde_json::to_string(&value) {
        let _ = crate::fsutil::write_atomic(memo, text.as_bytes());
    }
}

fn shown<T: serde::Serialize>(piece: &Result<T, String>) -> String {
    match piece {
        Ok(p) => serde_json::to_string(p).unwrap_or_default(),
        Err(e) => format!("missing: {e}"),
    }
}

/// What `build` would compile with, and what discovery looked at.
fn toolchain_inputs() -> (BTreeMap<String, String>, Vec<PathBuf>) {
    let mut inputs = BTreeMap::new();
    let d = Discovery::run();
    let mut watched = d.watched();
    inputs.insert("rustc".into(), shown(&d.rustc));
    let cargo = d
        .cargo
        .map(|p| format!("{} {}", p.display(), file_identity(&p)));
    inputs.insert("cargo".into(), shown(&cargo));
    inputs.insert("llvm tools".into(), shown(&d.llvm));
    let libdevice = d.libdevice.and_then(|p| {
        let digest = sha256_file(&p).map_err(|e| e.to_string())?;
        Ok(format!("{} {digest}", p.display()))
    });
    inputs.insert("libdevice".into(), shown(&libdevice));
    inputs.insert("ptxas".into(), shown(&d.ptxas));
    let me = std::env::current_exe()
        .map(|p| format!("{} {}", p.display(), file_identity(&p)))
        .unwrap_or_else(|e| e.to_string());
    inputs.insert(
        "cargo-oxide".into(),
        format!("{} {me}", env!("CARGO_PKG_VERSION")),
    );
    watched.extend(std::env::current_exe());
    (inputs, watched)
}

/// The options that change artifacts; returns the crate's folder. Destructured field by
/// field, so that a new option does not compile until it is classed here (and in
/// oxide-abi's table, which a test compares with the command line).
fn option_inputs(args: &BuildArgs, inputs: &mut BTreeMap<String, String>) -> Result<PathBuf> {
    let BuildArgs {
        krate:
            krate @ CrateArgs {
                manifest_path,
                out_dir: _,
                debug: _,
                release: _,
                features: _,
                all_features,
                no_default_features,
            },
        arch,
        json: _,
        require_ptxas: _,
        no_emu,
        no_fmad: _,
    } = args;
    let manifest = match manifest_path {
        Some(p) => std::path::absolute(p)?,
        None => crate::project::nearest_manifest()?,
    };
    let manifest = std::fs::canonicalize(&manifest).unwrap_or(manifest);
    let mut archs: Vec<&str> = Vec::new();
    for a in arch.iter().map(|a| a.trim()) {
        if !archs.contains(&a) {
            archs.push(a);
        }
    }
    let options = [
        ("--manifest-path", manifest.display().to_string()),
        ("--arch", archs.join(",")),
        ("profile", krate.profile().dir_name().to_string()),
        ("features", krate.cargo_feature_args().join(" ")),
        ("--all-features", all_features.to_string()),
        ("--no-default-features", no_default_features.to_string()),
        ("--no-emu", no_emu.to_string()),
        ("fmad", args.fmad().to_string()),
    ];
    for (name, value) in options {
        inputs.insert(format!("option {name}"), value);
    }
    Ok(manifest
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf))
}

/// Where cargo looks for config files for a crate in `crate_dir`: `.cargo/config.toml`
/// (and the old `.cargo/config`) in it and every folder above, then in cargo's home.
fn cargo_config_candidates(crate_dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = crate_dir.ancestors().map(|d| d.join(".cargo")).collect();
    dirs.extend(env::cargo_home());
    dirs.into_iter()
        .flat_map(|d| [d.join("config.toml"), d.join("config")])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::DISCOVERY_VARIABLES;

    #[test]
    fn the_memo_is_keyed_by_every_variable_discovery_reads() {
        let src = include_str!("../toolchain.rs").to_owned() + include_str!("../env.rs");
        let read = src
            .split("env::")
            .skip(1)
            .filter_map(|rest| {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                    .collect();
                (name.len() > 1).then_some(name)
            })
            .filter(|name| name != "PYOXIDE_CACHE_DIR" && name != "XDG_CACHE_HOME");
        let aliases = |v: &str| match v {
            "OXIDE_RUSTC" => "RUSTC".to_owned(),
            "OXIDE_CARGO" => "CARGO".into(),
            "OXIDE_LLVM_BIN" => "LLVM_BIN".into(),
            "OXIDE_LIBDEVICE" => "LIBDEVICE".into(),
            "OXIDE_PTXAS" => "PTXAS".into(),
            "OXIDE_PYTHON" => "PYTHON".into(),
            other => other.into(),
        };
        let listed: Vec<String> = DISCOVERY_VARIABLES
            .iter()
            .map(|v| aliases(v.name))
            .collect();
        for name in read {
            assert!(
                listed.contains(&name),
                "toolchain.rs reads {name}, not in DISCOVERY_VARIABLES"
            );
        }
    }
}
