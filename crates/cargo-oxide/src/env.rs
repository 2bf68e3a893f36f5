//! Every environment variable cargo-oxide reads, read through oxide-abi's table
//! (`oxide_abi::inputs`): a variable that is not in the table cannot be read here, and
//! the build key (`commands::key`) takes its variables from the same table.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
pub use oxide_abi::inputs::Variable;
use oxide_abi::inputs::{CARGO_HOME, Effect, HOME, PYOXIDE_CACHE_DIR, VARIABLES, XDG_CACHE_HOME};
pub use oxide_abi::inputs::{
    CUDA_HOME, CUDA_OXIDE_NO_FMA, CUDA_PATH, OXIDE_CARGO as CARGO, OXIDE_KEEP_TEMPS as KEEP_TEMPS,
    OXIDE_LIBDEVICE as LIBDEVICE, OXIDE_LLVM_BIN as LLVM_BIN, OXIDE_NO_FMAD as NO_FMAD,
    OXIDE_PTXAS as PTXAS, OXIDE_PYTHON as PYTHON, OXIDE_RUSTC as RUSTC, PATH,
};

/// A variable's value; unset and empty are the same.
pub fn var(v: Variable) -> Option<OsString> {
    debug_assert!(!v.prefix && v.reader.reaches_cargo_oxide(), "{}", v.name);
    std::env::var_os(v.name).filter(|v| !v.is_empty())
}

pub fn path(v: Variable) -> Option<PathBuf> {
    var(v).map(PathBuf::from)
}

/// Set, and not `0`.
pub fn flag(v: Variable) -> bool {
    var(v).is_some_and(|v| v != "0")
}

/// The value of every variable whose value is part of the build key ([`Effect::Key`],
/// read by cargo-oxide or the cargo it runs), families expanded; unset ones as "".
pub fn keyed() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for v in VARIABLES
        .iter()
        .filter(|v| v.effect == Effect::Key && v.reader.reaches_cargo_oxide())
    {
        if v.prefix {
            for (name, value) in std::env::vars_os() {
                let name = name.to_string_lossy();
                if name.starts_with(v.name) {
                    out.insert(name.into_owned(), value.to_string_lossy().into_owned());
                }
            }
        } else {
            let value = std::env::var_os(v.name).unwrap_or_default();
            out.insert(v.name.into(), value.to_string_lossy().into_owned());
        }
    }
    out
}

/// The user's home folder: `HOME`, else (unset or empty, as under cron or `env -i`) the
/// user database's entry for this user, never a shared folder such as the temp folder.
pub fn home() -> Option<PathBuf> {
    path(HOME).or_else(home_from_user_database)
}

#[cfg(unix)]
fn home_from_user_database() -> Option<PathBuf> {
    use std::ffi::CStr;
    use std::os::unix::ffi::OsStrExt;
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: passwd is plain data; getpwuid_r writes it and strings into `buf`, whose
    // length it is told, and sets `result` to it or to null.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(
            libc::geteuid(),
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        );
        if rc != 0 || result.is_null() || pwd.pw_dir.is_null() {
            return None;
        }
        let dir = CStr::from_ptr(pwd.pw_dir).to_bytes();
        (!dir.is_empty()).then(|| PathBuf::from(std::ffi::OsStr::from_bytes(dir)))
    }
}

#[cfg(not(unix))]
fn home_from_user_database() -> Option<PathBuf> {
    None
}

/// cargo's home (`CARGO_HOME`, else `<home>/.cargo`), whose config.toml cargo reads.
pub fn cargo_home() -> Option<PathBuf> {
    path(CARGO_HOME).or_else(|| home().map(|h| h.join(".cargo")))
}

/// The cache folder, by the one rule pyoxide's Python side also follows (it asks
/// `cargo oxide key`): `PYOXIDE_CACHE_DIR`, else `$XDG_CACHE_HOME/pyoxide`, else
/// `<home>/.cache/pyoxide`. Created when missing; refused when another user owns it or
/// others may write to it, since the `core` and the builds in it end up in kernels.
pub fn cache_dir() -> Result<PathBuf> {
    let dir = cache_dir_unchecked()?;
    private_dir(&dir)?;
    Ok(dir)
}

/// The cache folder by the rule of [`cache_dir`], neither created nor checked.
pub fn cache_dir_unchecked() -> Result<PathBuf> {
    let dir = if let Some(p) = path(PYOXIDE_CACHE_DIR) {
        p
    } else if let Some(p) = path(XDG_CACHE_HOME) {
        p.join("pyoxide")
    } else if let Some(home) = home() {
        home.join(".cache").join("pyoxide")
    } else {
        bail!(
            "no cache folder: HOME is unset and the user database has no home folder for \
             this user. Fix: set {} to a folder of your own",
            PYOXIDE_CACHE_DIR.name
        )
    };
    Ok(std::path::absolute(&dir)?)
}

/// Create `dir` (and its missing parents) readable by others but writable only by this
/// user, or check that an existing one is so.
pub fn private_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        if !dir.is_dir() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(dir)
                .map_err(|e| {
                    anyhow::anyhow!("cannot create the cache folder {}: {e}", dir.display())
                })?;
        }
        let meta = std::fs::metadata(dir)?;
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        let problem = if meta.uid() != me {
            Some(format!(
                "it belongs to user id {}, not to you ({me})",
                meta.uid()
            ))
        } else if meta.mode() & 0o022 != 0 {
            Some(format!(
                "others may write to it (mode {:o})",
                meta.mode() & 0o777
            ))
        } else {
            None
        };
        if let Some(problem) = problem {
            bail!(
                "refusing the cache folder {}: {problem}, so another user could plant a \
                 `core` or a build there that would end up in your kernels. Fix: `chmod go-w \
                 {}` if it is yours, or point {} at a folder of your own",
                dir.display(),
                dir.display(),
                PYOXIDE_CACHE_DIR.name
            );
        }
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir)?;
    Ok(())
}

/// The cuda toolkit roots users commonly point at.
pub fn cuda_homes() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = [CUDA_HOME, CUDA_PATH]
        .into_iter()
        .filter_map(path)
        .collect();
    v.push(PathBuf::from("/usr/local/cuda"));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_database_knows_this_users_home() {
        let home = home_from_user_database().expect("a passwd entry for this user");
        assert!(home.is_absolute(), "{}", home.display());
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_others_may_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("cache");
        private_dir(&dir).unwrap();
        assert_eq!(
            std::fs::metadata(&dir).unwrap().permissions().mode() & 0o022,
            0
        );
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = private_dir(&dir).unwrap_err().to_string();
        assert!(
            e.contains("others may write") && e.contains("chmod go-w"),
            "{e}"
        );
    }
}
