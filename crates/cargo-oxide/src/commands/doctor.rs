//! `cargo oxide doctor`: every toolchain piece, where it was found, and for each missing
//! one the command that installs it. Needs no GPU and no CUDA.

use serde_json::json;

use crate::cli::DoctorArgs;
use crate::exit;
use crate::toolchain::{APT_RUST, Discovery, cuda_driver_version};

struct Line {
    piece: &'static str,
    required: bool,
    found: Result<String, String>,
}

impl Line {
    fn required(piece: &'static str, found: Result<String, String>) -> Line {
        Line {
            piece,
            required: true,
            found,
        }
    }

    fn optional(piece: &'static str, found: Result<String, String>) -> Line {
        Line {
            piece,
            required: false,
            found,
        }
    }
}

/// What a discovery found, shown by `show`, or why it found nothing.
fn shown<T>(found: &Result<T, String>, show: impl FnOnce(&T) -> String) -> Result<String, String> {
    found.as_ref().map(show).map_err(Clone::clone)
}

pub fn run(args: &DoctorArgs) -> i32 {
    let d = Discovery::run();
    let rust_src = match &d.rustc {
        Ok(r) => match &r.library_src {
            Some(p) => Ok(p.display().to_string()),
            None => Err(format!(
                "missing for {}; install it with `{APT_RUST}` (Debian 12) or `rustup component add rust-src`",
                r.version
            )),
        },
        Err(_) => Err("needs a rustc first".to_string()),
    };
    let lines = [
        Line::required(
            "rustc",
            shown(&d.rustc, |r| {
                format!(
                    "{} at {} (LLVM {})",
                    r.version,
                    r.path.display(),
                    r.llvm_version
                )
            }),
        ),
        Line::required("rust-src", rust_src),
        Line::required("cargo", shown(&d.cargo, |p| p.display().to_string())),
        Line::required(
            "llvm tools",
            shown(&d.llvm, |l| {
                let tools = [&l.llvm_link, &l.opt, &l.llc].map(|t| t.display().to_string());
                format!("LLVM {}: {}", l.version, tools.join(", "))
            }),
        ),
        Line::optional(
            "libdevice",
            shown(&d.libdevice, |p| p.display().to_string()),
        ),
        Line::optional(
            "ptxas",
            shown(&d.ptxas, |p| {
                format!("{} ({})", p.path.display(), p.version)
            }),
        ),
        Line::optional(
            "cuda driver",
            cuda_driver_version().map(|v| format!("CUDA {v}")),
        ),
    ];
    let ready = lines.iter().all(|l| !l.required || l.found.is_ok());
    if args.json {
        let pieces: Vec<_> = lines
            .iter()
            .map(|l| {
                let (found, detail) = match &l.found {
                    Ok(v) => (true, v),
                    Err(e) => (false, e),
                };
                json!({"piece": l.piece, "required": l.required, "found": found, "detail": detail})
            })
            .collect();
        println!("{}", json!({"ready_to_build": ready, "pieces": pieces}));
    } else {
        for l in &lines {
            let (mark, text) = match &l.found {
                Ok(v) => ("ok", v.as_str()),
                Err(e) if l.required => ("MISSING", e.as_str()),
                Err(e) => ("absent", e.as_str()),
            };
            println!("{:>12}  {:<8} {}", l.piece, mark, text);
        }
        if ready {
            println!("\nready to build kernels");
        } else {
            println!("\nnot ready to build kernels: install the pieces marked MISSING");
        }
    }
    if ready {
        exit::OK
    } else {
        exit::TOOLCHAIN_MISSING
    }
}
