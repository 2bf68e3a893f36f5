//! The link step. rustc runs this binary as the "linker" of the nvptx cdylib, with
//! llvm-bitcode-linker's arguments (`--export-symbol S`, bitcode `.o` files, rlibs,
//! `--target-cpu`, `-o OUT`); `cargo oxide build` hands it the rest through the file
//! named by [`LINK_CONFIG_ENV`].
//!
//! Stages: llvm-link every bitcode object (rlib members included) → internalize all but
//! the exported symbols and drop the dead code → read out the kernel descriptors and
//! rewrite the module ([`crate::ir`]: entries, their parameters' `noalias`/`readonly`/
//! `align`, shared statics) → link the libdevice functions it calls →
//! internalize all but the kernels, optimise (O3) → the module that `llc` turns into
//! PTX per architecture → which kernels need whole warps ([`ir::whole_warp_users`]).
//! The descriptors go to a JSON file beside it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use oxide_abi::descriptor::{ConstantDescriptor, KernelDescriptor};
use oxide_abi::names::LINK_CONFIG_ENV;
use serde::{Deserialize, Serialize};

use crate::fsutil::write_atomic;
use crate::{exit, ir};

/// What `cargo oxide build` tells the link step.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LinkConfig {
    pub llvm_link: PathBuf,
    pub opt: PathBuf,
    pub libdevice: Option<PathBuf>,
    /// Run the O3 pipeline (release) or only drop dead code (debug).
    pub optimize: bool,
    /// The optimised module (bitcode), input of `llc`.
    pub out_module: PathBuf,
    /// The kernel descriptors (a JSON array).
    pub out_descriptors: PathBuf,
    /// Written when the link step fails, so `cargo oxide build` can show the error
    /// without rustc's linker-invocation noise around it.
    pub error_file: PathBuf,
    /// Folder for intermediate files.
    pub work_dir: PathBuf,
    /// Keep the intermediate `.ll` files there.
    pub keep_temps: bool,
}

impl LinkConfig {
    pub fn read(path: &Path) -> Result<LinkConfig> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the link configuration {}", path.display()))?;
        serde_json::from_str(&text).context("parsing the link configuration")
    }
}

/// rustc runs us as a linker: our configuration is in the environment and the
/// arguments are a linker's, not a subcommand.
pub fn invoked_as_linker() -> bool {
    std::env::var_os(LINK_CONFIG_ENV).is_some()
        && std::env::args().nth(1).is_some_and(|a| a != "oxide")
        && std::env::args().any(|a| a == "-o")
}

/// The linker command line rustc passes.
#[derive(Debug, Default, PartialEq)]
pub struct LinkerArgs {
    pub exports: Vec<String>,
    pub inputs: Vec<PathBuf>,
    pub output: Option<PathBuf>,
}

pub fn parse_linker_args(args: impl IntoIterator<Item = String>) -> Result<LinkerArgs> {
    let mut parsed = LinkerArgs::default();
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--export-symbol" => parsed.exports.extend(it.next()),
            "-o" => parsed.output = it.next().map(PathBuf::from),
            // Flags with a value that the link step does not need: the architecture is
            // chosen per `llc` run, the library paths hold nothing we link.
            "-L" | "--target" | "--target-cpu" | "--target-feature" | "--linker-flavor" => {
                it.next();
            }
            s if s.starts_with('-') => {}
            _ => parsed.inputs.push(PathBuf::from(arg)),
        }
    }
    if parsed.output.is_none() {
        bail!("the linker was called without -o");
    }
    Ok(parsed)
}

pub fn run_as_linker() -> i32 {
    let config_path = PathBuf::from(std::env::var_os(LINK_CONFIG_ENV).unwrap());
    let config = match LinkConfig::read(&config_path) {
        Ok(c) => c,
        Err(e) => {
            super::report(&e);
            return exit::BUILD_FAILED;
        }
    };
    let result = parse_linker_args(std::env::args().skip(1)).and_then(|args| link(&config, &args));
    match result {
        Ok(()) => exit::OK,
        Err(e) => {
            let mut text = format!("{e}");
            for cause in e.chain().skip(1) {
                text.push_str(&format!("\n  caused by: {cause}"));
            }
            let _ = write_atomic(&config.error_file, text.as_bytes());
            eprintln!("error: cargo-oxide link step: {text}");
            exit::BUILD_FAILED
        }
    }
}

/// Without it opt builds no NVPTX target machine: no NVVMReflect (libdevice's
/// `__nvvm_reflect` calls stay), no NVPTX cost model, no address-space inference.
const TRIPLE_FLAG: &str = "-mtriple=nvptx64-nvidia-cuda";

const BITCODE_MAGIC: &[u8] = b"BC\xC0\xDE";
const BITCODE_WRAPPER_MAGIC: &[u8] = b"\xDE\xC0\x17\x0B";

fn is_bitcode(bytes: &[u8]) -> bool {
    bytes.starts_with(BITCODE_MAGIC) || bytes.starts_with(BITCODE_WRAPPER_MAGIC)
}

/// Write the bitcode members of an rlib into `dir`; return their paths.
fn extract_rlib(rlib: &Path, dir: &Path, index: usize) -> Result<Vec<PathBuf>> {
    let data = std::fs::read(rlib).with_context(|| format!("reading {}", rlib.display()))?;
    let archive = object::read::archive::ArchiveFile::parse(&*data)
        .with_context(|| format!("{} is not an archive", rlib.display()))?;
    let mut out = Vec::new();
    for (i, member) in archive.members().enumerate() {
        let member = member?;
        let bytes = member.data(&*data)?;
        if !is_bitcode(bytes) {
            continue; // lib.rmeta and friends
        }
        let path = dir.join(format!("rlib{index}-{i}.bc"));
        std::fs::write(&path, bytes)?;
        out.push(path);
    }
    Ok(out)
}

fn run_tool(tool: &Path, args: &[&std::ffi::OsStr], what: &str) -> Result<()> {
    let failed = || format!("{what} failed ({})", tool.display());
    crate::ptx::run_tool(Command::new(tool).args(args), failed).map(drop)
}

pub fn link(config: &LinkConfig, args: &LinkerArgs) -> Result<()> {
    std::fs::create_dir_all(&config.work_dir)?;
    let work = tempfile::Builder::new()
        .prefix("link-")
        .tempdir_in(&config.work_dir)?;
    let tmp = work.path();

    let mut inputs = Vec::new();
    for (i, input) in args.inputs.iter().enumerate() {
        match input.extension().and_then(|e| e.to_str()) {
            Some("rlib") | Some("a") => inputs.extend(extract_rlib(input, tmp, i)?),
            _ => inputs.push(input.clone()),
        }
    }

    let linked = tmp.join("linked.bc");
    let mut link_args: Vec<&std::ffi::OsStr> = inputs.iter().map(|p| p.as_os_str()).collect();
    link_args.extend(["-o".as_ref(), linked.as_os_str()]);
    run_tool(&config.llvm_link, &link_args, "linking the crate's bitcode")?;

    // Shrink the module to what the exported symbols reach before reading it as text.
    let pruned = tmp.join("pruned.ll");
    let exports = format!("-internalize-public-api-list={}", args.exports.join(","));
    run_tool(
        &config.opt,
        &[
            TRIPLE_FLAG.as_ref(),
            "-passes=internalize,globaldce".as_ref(),
            exports.as_ref(),
            linked.as_os_str(),
            "-S".as_ref(),
            "-o".as_ref(),
            pruned.as_os_str(),
        ],
        "pruning the linked module",
    )?;
    let text = std::fs::read_to_string(&pruned)?;
    let (raw_descriptors, text) = ir::take_descriptors(&text)?;
    let (raw_constants, raw_descriptors): (Vec<_>, Vec<_>) = raw_descriptors
        .into_iter()
        .partition(|b| ConstantDescriptor::is_constant(b));
    let descriptors = decode_all(&raw_descriptors)?;
    let constants = raw_constants
        .iter()
        .map(|b| ConstantDescriptor::decode(b))
        .collect::<Result<Vec<_>, _>>()?;
    let kernels: BTreeMap<String, _> = descriptors
        .iter()
        .map(|d| (d.entry.clone(), ir::EntryAttrs::of(d)))
        .collect();
    let text = ir::strip_cpu_attributes(&text);
    let text = ir::mark_kernels(&text, &kernels)?;
    let facts: BTreeMap<String, _> = descriptors
        .iter()
        .map(|d| (d.entry.clone(), ir::param_facts(d)))
        .collect();
    let text = ir::annotate_params(&text, &facts)?;
    let (text, _shared) = ir::move_shared_statics(&text)?;
    // Constants that no kernel reads were pruned above; those left stay visible.
    let (text, kept_constants) = ir::move_constant_statics(&text)?;
    let rewritten = tmp.join("rewritten.ll");
    std::fs::write(&rewritten, &text)?;

    let mut module = rewritten.clone();
    if ir::needs_libdevice(&text) {
        let Some(libdevice) = &config.libdevice else {
            bail!(
                "the kernels call CUDA math functions (__nv_*) but libdevice.10.bc was not \
                 found; install it with `{}` or set {}",
                crate::toolchain::PIP_LIBDEVICE,
                crate::env::LIBDEVICE.name
            );
        };
        let with_math = tmp.join("with-libdevice.bc");
        // The first file is linked whole, the rest only for what it calls.
        run_tool(
            &config.llvm_link,
            &[
                rewritten.as_os_str(),
                "--only-needed".as_ref(),
                "--suppress-warnings".as_ref(),
                libdevice.as_os_str(),
                "-o".as_ref(),
                with_math.as_os_str(),
            ],
            "linking libdevice",
        )?;
        module = with_math;
    }

    let entries = format!(
        "-internalize-public-api-list={}",
        descriptors
            .iter()
            .map(|d| d.entry.as_str())
            .chain(kept_constants.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(",")
    );
    let pipeline = if config.optimize {
        // NVVMReflect first: libdevice branches on `__nvvm_reflect("__CUDA_FTZ")`, and
        // folding it before O3 lets the untaken branches and the string disappear.
        "-passes=nvvm-reflect,internalize,default<O3>"
    } else {
        "-passes=nvvm-reflect,internalize,globaldce"
    };
    // As text: the scan below reads it, and `llc` reads either form.
    let optimized = tmp.join("optimized.ll");
    run_tool(
        &config.opt,
        &[
            TRIPLE_FLAG.as_ref(),
            pipeline.as_ref(),
            entries.as_ref(),
            module.as_os_str(),
            "-S".as_ref(),
            "-o".as_ref(),
            optimized.as_os_str(),
        ],
        "optimising the kernels",
    )?;
    let optimized_text = std::fs::read_to_string(&optimized)?;
    let mut descriptors = descriptors;
    let entry_names: Vec<&str> = descriptors.iter().map(|d| d.entry.as_str()).collect();
    let mut whole_warps = ir::whole_warp_users(&optimized_text, &entry_names);
    for d in &mut descriptors {
        d.whole_warps = whole_warps.remove(&d.entry);
    }

    write_atomic(&config.out_module, optimized_text.as_bytes())?;
    write_atomic(
        &config.out_descriptors,
        serde_json::to_string_pretty(&descriptors)?.as_bytes(),
    )?;
    write_atomic(
        &constants_file(&config.out_descriptors),
        serde_json::to_string_pretty(&constants)?.as_bytes(),
    )?;
    // rustc expects its output file; the PTX proper is written per architecture by
    // `cargo oxide build`.
    if let Some(out) = &args.output {
        let note = format!(
            "// pyoxide: this crate's PTX is written per architecture by `cargo oxide build`\n\
             // (module: {})\n",
            config.out_module.display()
        );
        std::fs::write(out, note)?;
    }
    if config.keep_temps {
        let keep = config.work_dir.join("last");
        std::fs::remove_dir_all(&keep).ok();
        std::fs::rename(work.keep(), &keep).ok();
    }
    Ok(())
}

/// Where the link step writes the `#[constant]` descriptors: beside the kernels'.
pub fn constants_file(descriptors: &std::path::Path) -> std::path::PathBuf {
    descriptors.with_extension("constants.json")
}

fn decode_all(raw: &[Vec<u8>]) -> Result<Vec<KernelDescriptor>> {
    let mut out: Vec<KernelDescriptor> = Vec::new();
    for bytes in raw {
        let d = KernelDescriptor::decode(bytes)?;
        if let Some(prev) = out.iter().find(|p| p.entry == d.entry) {
            bail!(
                "two kernels have the entry symbol `{}`: {} ({}:{}) and {} ({}:{}); rename one",
                d.entry,
                prev.name,
                prev.source.file,
                prev.source.line,
                d.name,
                d.source.file,
                d.source.line
            );
        }
        out.push(d);
    }
    out.sort_by(|a, b| a.entry.cmp(&b.entry));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rustc_linker_arguments_are_read() {
        let args = "--export-symbol vecadd --export-symbol saxpy /t/k.o /s/libcore-1.rlib -L /x \
                    --target nvptx64-nvidia-cuda --target-cpu sm_30 -o /t/k.ptx -O3 --debug";
        let parsed = parse_linker_args(args.split(' ').map(String::from)).unwrap();
        assert_eq!(parsed.exports, ["vecadd", "saxpy"]);
        assert_eq!(
            parsed.inputs,
            [PathBuf::from("/t/k.o"), PathBuf::from("/s/libcore-1.rlib")]
        );
        assert_eq!(parsed.output, Some(PathBuf::from("/t/k.ptx")));
    }

    #[test]
    fn a_linker_call_without_output_is_refused() {
        assert!(parse_linker_args(["a.o".to_string()]).is_err());
    }

    #[test]
    fn bitcode_is_recognised() {
        assert!(is_bitcode(b"BC\xC0\xDE\x35\x14"));
        assert!(!is_bitcode(b"rust\0\0\0"));
    }
}
