//! `cargo oxide inspect [KERNEL]`: a built kernel's PTX and ptxas's resource report.
//! Reads the manifest and the PTX; builds nothing.

use anyhow::{Context, Result, bail};
use oxide_abi::manifest::{Manifest, PtxArtifact};

use crate::cli::InspectArgs;
use crate::project::Project;
use crate::toolchain::Discovery;
use crate::{exit, ptx};

pub fn run(args: &InspectArgs) -> i32 {
    match inspect(args) {
        Ok(code) => code,
        Err(e) => super::fail(&e),
    }
}

/// Append a line to the report (printed at the end, so a closed pipe such as
/// `| head` ends the command quietly instead of panicking mid-way).
macro_rules! outln {
    ($out:ident, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($out, $($arg)*);
    }};
}

fn inspect(args: &InspectArgs) -> Result<i32> {
    let mut out = String::new();
    let code = inspect_into(args, &mut out)?;
    use std::io::Write as _;
    let _ = std::io::stdout().write_all(out.as_bytes());
    Ok(code)
}

fn inspect_into(args: &InspectArgs, out: &mut String) -> Result<i32> {
    let tc = exit::coded(
        Discovery::run().for_build().map_err(anyhow::Error::msg),
        exit::TOOLCHAIN_MISSING,
    )?;
    let project = exit::coded(Project::locate(&args.krate, &tc.cargo), exit::USAGE)?;
    let path = project.manifest_file();
    let text = exit::coded(
        std::fs::read_to_string(&path).with_context(|| {
            format!(
                "no manifest at {}; run `cargo oxide build` first",
                path.display()
            )
        }),
        exit::LOAD_FAILED,
    )?;
    let manifest = exit::coded(
        Manifest::from_json(&text).map_err(anyhow::Error::msg),
        exit::LOAD_FAILED,
    )?;

    let Some(wanted) = &args.kernel else {
        outln!(
            out,
            "kernels of {} ({} build):",
            manifest.krate.name,
            manifest.profile
        );
        for k in &manifest.kernels {
            let params: Vec<String> = k
                .params
                .iter()
                .map(|p| format!("{}: {:?}<{}>", p.name, p.kind, p.ty.rust_name()))
                .collect();
            outln!(out, "  {:<20} {}({})", k.entry, k.name, params.join(", "));
        }
        return Ok(exit::OK);
    };
    let kernels: Vec<_> = manifest.kernel(wanted).collect();
    if kernels.is_empty() {
        let names: Vec<&str> = manifest.kernels.iter().map(|k| k.entry.as_str()).collect();
        eprintln!(
            "error: no kernel `{wanted}` in {}; it has: {}",
            manifest.krate.name,
            names.join(", ")
        );
        return Ok(exit::NOT_FOUND);
    }
    let artifact = exit::coded(
        pick_artifact(&manifest.artifacts, args.arch.as_deref()),
        exit::NOT_FOUND,
    )?;
    let ptx_file = exit::coded(
        oxide_abi::manifest::artifact_file(&project.out_dir, &artifact.path)
            .map_err(anyhow::Error::msg),
        exit::LOAD_FAILED,
    )?;
    let ptx_text = std::fs::read_to_string(ptx_file)?;
    for d in &artifact.ptxas_diagnostics {
        outln!(out, "// ptxas {} ({}): {d}", d.level.name(), artifact.path);
    }
    for k in kernels {
        outln!(
            out,
            "// kernel {} (entry {}) for {}, PTX {}",
            k.name,
            k.entry,
            artifact.arch,
            artifact.ptx_version
        );
        match artifact.ptxas.as_ref().and_then(|r| r.get(&k.entry)) {
            Some(r) => {
                outln!(
                    out,
                    "// ptxas: {} registers, {} bytes shared, {} bytes stack, {} bytes spill stores, {} bytes spill loads, {} barriers",
                    r.registers,
                    r.shared_bytes,
                    r.stack_frame_bytes,
                    r.spill_store_bytes,
                    r.spill_load_bytes,
                    r.barriers
                );
                for d in &r.diagnostics {
                    outln!(out, "// ptxas {}: {d}", d.level.name());
                }
            }
            None => outln!(
                out,
                "// ptxas: no report (ptxas was not available at build time)"
            ),
        }
        if !args.resources {
            let body = ptx::entry_text(&ptx_text, &k.entry)
                .with_context(|| format!("entry {} is missing from {}", k.entry, artifact.path))?;
            outln!(out, "{body}\n");
        }
    }
    Ok(exit::OK)
}

fn pick_artifact<'a>(artifacts: &'a [PtxArtifact], arch: Option<&str>) -> Result<&'a PtxArtifact> {
    match arch {
        Some(a) => artifacts.iter().find(|x| x.arch == a).with_context(|| {
            let built: Vec<&str> = artifacts.iter().map(|x| x.arch.as_str()).collect();
            format!("no PTX for {a}; built: {}", built.join(", "))
        }),
        None => {
            let best = artifacts
                .iter()
                .max_by_key(|x| ptx::parse_arch(&x.arch).unwrap_or(0));
            match best {
                Some(b) => Ok(b),
                None => bail!("the manifest lists no PTX"),
            }
        }
    }
}
