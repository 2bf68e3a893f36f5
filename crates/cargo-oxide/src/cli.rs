//! The command line. cargo runs `cargo-oxide oxide <args>`; running `cargo-oxide
//! <args>` directly works too.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "cargo oxide",
    bin_name = "cargo oxide",
    version,
    about = "Build Rust #[kernel] crates to PTX with stock rustc, and inspect the result",
    after_help = crate::exit::help_text()
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Build the crate's kernels to PTX for each architecture, and write the manifest.
    Build(BuildArgs),
    /// Report every toolchain piece, and how to install each missing one.
    Doctor(DoctorArgs),
    /// Print a kernel's PTX and ptxas's resource report (registers, shared memory, spills).
    Inspect(InspectArgs),
    /// Remove the crate's device build and its artifacts.
    Clean(CleanArgs),
    /// Print, as JSON, the key of what `build` with these options would write here (the
    /// resolved toolchain, the options, the variables and cargo config files that change
    /// artifacts) and the cache folder. Builds nothing.
    Key(BuildArgs),
}

#[derive(Args, Debug, Clone)]
pub struct CrateArgs {
    /// Path to the kernel crate's Cargo.toml (default: the one in the current folder).
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Where artifacts go (default: <target-dir>/oxide/<profile>).
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Use the dev profile: no optimisation, overflow checks on.
    #[arg(long, conflicts_with = "release")]
    pub debug: bool,
    /// Use the release profile (the default).
    #[arg(long)]
    pub release: bool,
    /// Cargo features of the kernel crate to enable (comma- or space-separated), for
    /// the device and the emulator builds alike.
    #[arg(long, short = 'F', value_name = "FEATURES", value_delimiter = ',')]
    pub features: Vec<String>,
    /// Enable every feature of the kernel crate.
    #[arg(long)]
    pub all_features: bool,
    /// Do not enable the kernel crate's default features.
    #[arg(long)]
    pub no_default_features: bool,
}

impl CrateArgs {
    /// The feature flags to hand to both cargo builds.
    pub fn cargo_feature_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        let features: Vec<&str> = self
            .features
            .iter()
            .flat_map(|f| f.split_whitespace())
            .collect();
        if !features.is_empty() {
            args.push(format!("--features={}", features.join(",")));
        }
        if self.all_features {
            args.push("--all-features".into());
        }
        if self.no_default_features {
            args.push("--no-default-features".into());
        }
        args
    }

    pub fn profile(&self) -> Profile {
        if self.debug {
            Profile::Debug
        } else {
            Profile::Release
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    Release,
    Debug,
}

impl Profile {
    /// Name of the output folder cargo uses, and the name recorded in the manifest.
    pub fn dir_name(self) -> &'static str {
        match self {
            Profile::Release => "release",
            Profile::Debug => "debug",
        }
    }
}

#[derive(Args, Debug)]
pub struct BuildArgs {
    #[command(flatten)]
    pub krate: CrateArgs,
    /// GPU architectures, comma-separated (sm_75 … sm_120, with an `a` suffix for
    /// arch-specific features).
    #[arg(long, value_delimiter = ',', default_values = oxide_abi::arch::DEFAULT_ARCHS)]
    pub arch: Vec<String>,
    /// Print one JSON object describing the result on stdout (progress stays on stderr).
    #[arg(long)]
    pub json: bool,
    /// Fail instead of warning when ptxas is not available to verify the PTX.
    #[arg(long)]
    pub require_ptxas: bool,
    /// Build for the GPU only: no host library for the CPU emulator.
    #[arg(long)]
    pub no_emu: bool,
    /// Keep every multiply and add apart (two roundings, as Rust and the CPU emulator
    /// compute them) instead of contracting `a * b + c` into one fused multiply-add, as
    /// nvcc (`--fmad=true`) and cuda-oxide do by default. Also set by OXIDE_NO_FMAD=1 or
    /// cuda-oxide's CUDA_OXIDE_NO_FMA=1.
    #[arg(long)]
    pub no_fmad: bool,
}

impl BuildArgs {
    /// Whether `llc` may contract a multiply and an add into one `fma.rn`.
    pub fn fmad(&self) -> bool {
        !(self.no_fmad
            || crate::env::flag(crate::env::NO_FMAD)
            || crate::env::flag(crate::env::CUDA_OXIDE_NO_FMA))
    }
}

#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct InspectArgs {
    /// Kernel name or entry symbol (default: list the kernels).
    pub kernel: Option<String>,
    #[command(flatten)]
    pub krate: CrateArgs,
    /// Architecture whose PTX to show (default: the highest built).
    #[arg(long)]
    pub arch: Option<String>,
    /// Print only the resource report, not the PTX.
    #[arg(long)]
    pub resources: bool,
}

#[derive(Args, Debug)]
pub struct CleanArgs {
    #[command(flatten)]
    pub krate: CrateArgs,
    /// Also remove the cached `core` sysroot (rebuilt on the next build).
    #[arg(long)]
    pub sysroot: bool,
}

pub fn parse() -> Cli {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // `cargo oxide build` arrives as `cargo-oxide oxide build`.
    if args.get(1).is_some_and(|a| a == "oxide") {
        args.remove(1);
    }
    match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                crate::exit::USAGE
            } else {
                crate::exit::OK
            };
            let _ = e.print();
            std::process::exit(code);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_reach_cargo_as_cargo_spells_them() {
        let cli = Cli::try_parse_from([
            "cargo-oxide",
            "build",
            "--features",
            "a,b",
            "-F",
            "c d",
            "--no-default-features",
        ])
        .unwrap();
        let Command::Build(build) = cli.command else {
            panic!("not a build")
        };
        assert_eq!(
            build.krate.cargo_feature_args(),
            ["--features=a,b,c,d", "--no-default-features"]
        );
        let cli = Cli::try_parse_from(["cargo-oxide", "build", "--all-features"]).unwrap();
        let Command::Build(build) = cli.command else {
            panic!("not a build")
        };
        assert_eq!(build.krate.cargo_feature_args(), ["--all-features"]);
    }

    #[test]
    fn no_fmad_turns_contraction_off() {
        let parse = |extra: &[&str]| {
            let cli = Cli::try_parse_from([&["cargo-oxide", "build"][..], extra].concat());
            let Command::Build(build) = cli.unwrap().command else {
                panic!("not a build")
            };
            build
        };
        assert!(!parse(&["--no-fmad"]).fmad());
        // The default contracts unless the environment says otherwise (OXIDE_NO_FMAD or
        // CUDA_OXIDE_NO_FMA, read by `fmad()`).
        let env_off = [crate::env::NO_FMAD, crate::env::CUDA_OXIDE_NO_FMA]
            .iter()
            .any(|v| crate::env::flag(*v));
        assert_eq!(parse(&[]).fmad(), !env_off);
    }

    #[test]
    fn every_build_option_is_in_oxide_abis_table() {
        use clap::CommandFactory;
        let cli = Cli::command();
        // The long options of a subcommand, sorted.
        let long_flags = |name: &str| {
            let mut flags: Vec<String> = cli
                .find_subcommand(name)
                .unwrap()
                .get_arguments()
                .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
                .filter(|f| f != "--help")
                .collect();
            flags.sort();
            flags
        };
        let flags = long_flags("build");
        let mut table: Vec<String> = oxide_abi::inputs::BUILD_OPTIONS
            .iter()
            .map(|o| o.flag.to_string())
            .collect();
        table.sort();
        assert_eq!(
            flags, table,
            "oxide-abi's inputs::BUILD_OPTIONS and `build`'s options"
        );
        // `key` takes exactly `build`'s options, so its key is of the same command line.
        assert_eq!(long_flags("key"), flags);
    }
}
