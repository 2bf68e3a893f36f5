//! Which crate a command works on, and where its outputs go.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use oxide_abi::names::DEVICE_TARGET;

use crate::cli::{CrateArgs, Profile};
use crate::fsutil::sha256_hex;

/// The cfg that carries [`Project::location`] into rustc's arguments.
const LOCATION_CFG: &str = "oxide_workspace";

#[derive(Clone, Debug)]
pub struct Project {
    pub name: String,
    /// The crate name as rustc sees it (`-` → `_`): the artifacts' file stem.
    pub crate_name: String,
    pub version: String,
    pub manifest_path: PathBuf,
    /// Where the crate's workspace is, as a short hash (see [`Project::location_args`]).
    pub location: String,
    pub target_dir: PathBuf,
    pub profile: Profile,
    /// Where the PTX and the manifest go.
    pub out_dir: PathBuf,
    /// Names of the packages the crate depends on (any kind).
    pub dependencies: Vec<String>,
    /// The library's root source file (`src/lib.rs`).
    pub lib_root: PathBuf,
    /// `--features`, `--all-features`, `--no-default-features` as cargo takes them.
    pub feature_args: Vec<String>,
}

impl Project {
    /// Find the crate from `--manifest-path`, or the nearest Cargo.toml above the
    /// current folder, the way cargo does.
    pub fn locate(args: &CrateArgs, cargo: &Path) -> Result<Project> {
        let manifest_path = match &args.manifest_path {
            Some(p) => std::fs::canonicalize(p)
                .with_context(|| format!("--manifest-path {} does not exist", p.display()))?,
            None => nearest_manifest()?,
        };
        let metadata = cargo_metadata::MetadataCommand::new()
            .cargo_path(cargo)
            .current_dir(manifest_path.parent().unwrap_or(Path::new(".")))
            .manifest_path(&manifest_path)
            .no_deps()
            .exec()
            .with_context(|| format!("reading {}", manifest_path.display()))?;
        let Some(package) = metadata
            .packages
            .iter()
            .find(|p| p.manifest_path.as_std_path() == manifest_path)
        else {
            bail!(
                "{} is a workspace manifest, not a kernel crate; point --manifest-path at the \
                 Cargo.toml of the crate that holds the #[kernel] functions",
                manifest_path.display()
            );
        };
        // `[lib] crate-type = ["cdylib", "rlib"]` (a maturin project) is a library too:
        // the builds pass their own --crate-type.
        let is_library = |t: &&cargo_metadata::Target| {
            t.is_lib() || t.is_rlib() || t.is_cdylib() || t.is_dylib() || t.is_staticlib()
        };
        let Some(lib) = package.targets.iter().find(is_library) else {
            bail!(
                "{} has no library target; kernels live in a library crate (src/lib.rs)",
                package.name
            );
        };
        let profile = args.profile();
        let target_dir = metadata.target_directory.clone().into_std_path_buf();
        let out_dir = match &args.out_dir {
            Some(d) => std::path::absolute(d)?,
            None => target_dir.join("oxide").join(profile.dir_name()),
        };
        Ok(Project {
            name: package.name.to_string(),
            crate_name: lib.name.replace('-', "_"),
            version: package.version.to_string(),
            location: sha256_hex(metadata.workspace_root.as_str().as_bytes())[..16].to_string(),
            manifest_path,
            target_dir,
            profile,
            out_dir,
            dependencies: package
                .dependencies
                .iter()
                .map(|d| d.name.to_string())
                .collect(),
            lib_root: lib.src_path.clone().into_std_path_buf(),
            feature_args: args.cargo_feature_args(),
        })
    }

    /// Whether the crate root declares `#![no_std]` itself (also inside `cfg_attr`).
    /// cuda-oxide's kernel files do not (its backend supplies `core`), so the device
    /// build adds the attribute to crates that lack it; adding it twice would warn.
    pub fn declares_no_std(&self) -> bool {
        let Ok(text) = std::fs::read_to_string(&self.lib_root) else {
            return false;
        };
        text.lines().any(|line| {
            let line = line.trim_start();
            line.starts_with("#![") && line.contains("no_std")
        })
    }

    /// The folder cargo runs in: the crate's, so that its `.cargo/config.toml` (a `pyoxide
    /// new` project's source replacement, say) applies wherever the command was started,
    /// as `cargo oxide key` assumes when it hashes the config files.
    pub fn dir(&self) -> &Path {
        self.manifest_path.parent().unwrap_or(Path::new("."))
    }

    /// rustc arguments that tie a build's fingerprint to where the crate is. cargo hashes
    /// a path package relative to its workspace root, so two copies of one crate in two
    /// folders, built into one target dir (a shared `CARGO_TARGET_DIR`), share a unit
    /// and its fingerprint: without these, a copy whose sources are older than the other
    /// copy's build was found fresh, and its build reported the other copy's output.
    pub fn location_args(&self) -> [String; 2] {
        [
            format!("--check-cfg=cfg({LOCATION_CFG}, values(any()))"),
            format!("--cfg={LOCATION_CFG}=\"{}\"", self.location),
        ]
    }

    /// Folder of the link step's files for this crate: one per location, since the link
    /// step runs only when cargo links, and another copy's link must not stand in for it.
    pub fn link_dir(&self) -> PathBuf {
        self.target_dir
            .join("oxide")
            .join(self.profile.dir_name())
            .join("link")
            .join(format!("{}-{}", self.crate_name, self.location))
    }

    /// cargo's output folder for the device build.
    pub fn device_target_dir(&self) -> PathBuf {
        self.target_dir
            .join(DEVICE_TARGET)
            .join(self.profile.dir_name())
    }

    pub fn manifest_file(&self) -> PathBuf {
        self.out_dir
            .join(oxide_abi::manifest::manifest_file_name(&self.crate_name))
    }
}

/// The nearest Cargo.toml at or above the current folder, as cargo finds it.
pub fn nearest_manifest() -> Result<PathBuf> {
    let cwd = std::env::current_dir()?;
    cwd.ancestors()
        .map(|d| d.join("Cargo.toml"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "no Cargo.toml in {} or above; run in a kernel crate or pass --manifest-path",
                cwd.display()
            )
        })
}
