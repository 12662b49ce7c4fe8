//! Reading the files a user, a spec or a coordinator names: each read is
//! bounded and never blocks, and a file holding a secret is refused when
//! others could read or replace it.
//!
//! - An input file (a CA bundle, a descriptor set) must be a regular file
//!   of at most [`INPUT_MAX`] bytes: a FIFO is not waited on, `/dev/zero`
//!   is not read without end.
//! - A secret's file (a token, a key) must also be the file itself, not a
//!   link, owned by this user (or root) and closed to group and others, as
//!   ssh refuses a loose private key; `--accept-loose-secret-files` (the
//!   operator's choice) lets one through with a warning.

use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// The most an input file may hold (a CA bundle is a few hundred KiB, a
/// descriptor set a few MiB).
pub const INPUT_MAX: u64 = 16 << 20;

/// The most a secret's file may hold.
pub const SECRET_MAX: u64 = 4 << 10;

/// Set once by `--accept-loose-secret-files`.
static LOOSE_OK: AtomicBool = AtomicBool::new(false);

/// The operator accepts secret files others may read, or links to them.
pub fn accept_loose_secret_files() {
    LOOSE_OK.store(true, Ordering::Relaxed);
}

fn refused(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, why)
}

/// The bytes of `path`: a regular file of at most `max` bytes. It is opened
/// without blocking, and only a regular file is read.
pub fn read_regular(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    read_opened(path, max, 0)
}

fn read_opened(path: &Path, max: u64, flags: i32) -> io::Result<Vec<u8>> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | flags)
        .open(path)?;
    let m = f.metadata()?;
    if !m.is_file() {
        return Err(refused("not a regular file".into()));
    }
    if m.len() > max {
        return Err(refused(format!(
            "{} bytes: more than the {max} read of such a file",
            m.len()
        )));
    }
    let mut buf = Vec::with_capacity(usize::try_from(m.len()).unwrap_or(0));
    f.take(max + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Err(refused(format!(
            "more than the {max} bytes read of such a file"
        )));
    }
    Ok(buf)
}

/// The first line of a secret's file, trimmed, and a warning when it was
/// let through loose. Refused (unless the operator accepts loose files):
/// a link, a file of another user, a file group or others may read or
/// write. The error names `flag` and says how to fix it.
pub fn read_secret(path: &Path, flag: &str) -> Result<(String, Option<String>), String> {
    let at = |why: String| format!("{flag} {}: {why}", path.display());
    let meta = std::fs::symlink_metadata(path).map_err(|e| at(e.to_string()))?;
    let me = unsafe { libc::geteuid() };
    let loose = if meta.file_type().is_symlink() {
        Some("is a symbolic link: give the file itself".to_string())
    } else if meta.uid() != me && meta.uid() != 0 {
        Some(format!("belongs to another user (uid {})", meta.uid()))
    } else if meta.mode() & 0o077 != 0 {
        Some(format!(
            "group or others may read or write it (mode {:03o}): chmod 600 {}",
            meta.mode() & 0o777,
            path.display()
        ))
    } else {
        None
    };
    let warning = match loose {
        Some(why) if !LOOSE_OK.load(Ordering::Relaxed) => {
            return Err(at(format!(
                "refused: it holds a secret and {why} (or accept it with --accept-loose-secret-files)"
            )));
        }
        Some(why) => Some(at(format!(
            "warning: it holds a secret and {why}; used anyway (--accept-loose-secret-files)"
        ))),
        None => None,
    };
    let follow = match warning {
        Some(_) => 0,
        None => libc::O_NOFOLLOW,
    };
    let bytes = read_opened(path, SECRET_MAX, follow).map_err(|e| at(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| at("not text".into()))?;
    let first = text.lines().next().unwrap_or("").trim().to_string();
    if first.is_empty() {
        return Err(at("empty".into()));
    }
    Ok((first, warning))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("wirebench-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn an_input_is_a_bounded_regular_file_never_a_device_or_a_fifo() {
        let d = dir("input");
        let f = d.join("ca.pem");
        std::fs::write(&f, b"0123456789").unwrap();
        assert_eq!(read_regular(&f, 10).unwrap(), b"0123456789");
        let e = read_regular(&f, 9).unwrap_err().to_string();
        assert!(e.contains("more than the 9"), "{e}");
        let e = read_regular(Path::new("/dev/zero"), INPUT_MAX).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let t = std::time::Instant::now();
        let e = read_regular(&fifo, INPUT_MAX).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(t.elapsed() < std::time::Duration::from_secs(5));
        assert!(read_regular(&d, INPUT_MAX).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_secret_file_others_can_read_or_a_link_is_refused_by_name() {
        let d = dir("secret");
        let f = d.join("token");
        std::fs::write(&f, "s3cr3t-0123456789\nrest\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read_secret(&f, "--token-file").unwrap_err();
        assert!(
            e.starts_with("--token-file ") && e.contains("mode 644") && e.contains("chmod 600"),
            "{e}"
        );
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            read_secret(&f, "--token-file").unwrap(),
            ("s3cr3t-0123456789".to_string(), None)
        );
        let link = d.join("link");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        let e = read_secret(&link, "--token-file").unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        let e = read_secret(&d.join("absent"), "--token-file").unwrap_err();
        assert!(e.contains("No such file"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
