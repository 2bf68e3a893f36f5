//! File writes that never leave a half-written artifact: write a temp file in the
//! destination folder, then rename over the target (atomic on POSIX).

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut tmp = umask_respecting(&mut tempfile::Builder::new(), 0o666)
        .tempfile_in(dir)
        .with_context(|| format!("creating a temp file in {}", dir.display()))?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all().ok();
    tmp.persist(path)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn sha256_file(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(sha256_hex(&bytes))
}

/// A file's identity for a cache key, cheap (no read): its size and modification time,
/// which change whenever it is rebuilt or reinstalled.
pub fn file_identity(path: &Path) -> String {
    let Ok(meta) = std::fs::metadata(path) else {
        return "unknown".into();
    };
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!("{}-{}", meta.len(), mtime)
}

/// Temp files and folders with the mode an ordinary `open`/`mkdir` gives (0o666 or
/// 0o777 less the umask), less write access for others, rather than tempfile's private
/// 0o600/0o700: they are renamed into artifacts and caches that other users of a shared
/// checkout or cache read, but that only their owner may change (a cached build ends up
/// loaded in a process).
pub fn umask_respecting<'a, 'b>(
    builder: &'b mut tempfile::Builder<'a, 'a>,
    mode: u32,
) -> &'b mut tempfile::Builder<'a, 'a> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(mode & !0o022))
    }
    #[cfg(not(unix))]
    {
        let _ = mode;
        builder
    }
}
