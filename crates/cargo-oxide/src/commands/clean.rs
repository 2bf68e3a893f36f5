//! `cargo oxide clean`: remove the crate's device build and artifacts (and, with
//! `--sysroot`, the cached core).

use anyhow::Result;

use crate::cli::CleanArgs;
use crate::project::Project;
use crate::toolchain::Discovery;
use crate::{exit, sysroot};

pub fn run(args: &CleanArgs) -> i32 {
    match clean(args) {
        Ok(()) => exit::OK,
        Err(e) => {
            super::report(&e);
            exit::BUILD_FAILED
        }
    }
}

fn clean(args: &CleanArgs) -> Result<()> {
    let tc = Discovery::run().for_build().map_err(anyhow::Error::msg)?;
    let project = Project::locate(&args.krate, &tc.cargo)?;
    for dir in [
        project.out_dir.clone(),
        project.link_dir(),
        project.device_target_dir(),
    ] {
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
            eprintln!("     Removed {}", dir.display());
        }
    }
    if args.sysroot {
        let dir = sysroot::sysroot_dir(&tc)?;
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
            eprintln!("     Removed {}", dir.display());
        }
    }
    Ok(())
}
