//! Files to and from a bucket with wirebench's own S3 client: a results
//! directory copied up (`--upload`, `wirebench s3 upload`) and brought back
//! (`wirebench s3 download`). Both are resumable: an object already there
//! with the file's size (a file already here with the object's) is not
//! sent again, so a copy that was cut off, run again, completes. Memory is
//! bounded whatever the sizes: a file larger than [`SINGLE_MAX`] goes up in
//! parts of [`PART`], and a download comes in ranges of at most 1 MiB.

use super::client::{S3Client, Sink, xml_value};
use super::payload::Payload;
use bytes::Bytes;
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Component, Path, PathBuf};

/// The largest file sent in one PUT.
pub const SINGLE_MAX: u64 = 32 << 20;
/// The part size of larger files.
pub const PART: u64 = 16 << 20;
/// The most bytes one ranged GET asks for (what the client keeps of a body).
const RANGE: u64 = 1 << 20;
/// The most objects a listing takes in (a prefix holding more is refused).
pub const MAX_OBJECTS: usize = 1_000_000;

/// The client of a copy to or from `addr`'s `bucket`: path-style URLs,
/// credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (none:
/// anonymous), the region from AWS_REGION (us-east-1); with `tls`, the
/// Mozilla roots and the CAs of `ca_file`.
pub fn client(
    addr: &str,
    bucket: &str,
    tls: bool,
    ca_file: Option<&Path>,
) -> Result<S3Client, String> {
    let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
    let creds = var("AWS_ACCESS_KEY_ID")
        .zip(var("AWS_SECRET_ACCESS_KEY"))
        .map(|(k, s)| rusty_s3::Credentials::new(k, s));
    let region = var("AWS_REGION").unwrap_or_else(|| "us-east-1".into());
    S3Client::new(
        addr,
        bucket,
        wirebench_core::spec::UrlStyle::Path,
        &region,
        creds,
        tls.then_some(ca_file),
    )
}

/// What a copy did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Copied {
    /// Files (objects) it covers.
    pub files: usize,
    /// Of them, those sent (brought) now; the others were there already.
    pub sent: usize,
    /// Bytes sent (brought) now.
    pub bytes: u64,
}

/// The objects under `prefix` (keys starting with it) and their sizes.
pub async fn list(c: &S3Client, prefix: &str) -> Result<BTreeMap<String, u64>, String> {
    let mut conn = c.connect().await.map_err(|e| e.to_string())?;
    let mut out = BTreeMap::new();
    let mut token: Option<String> = None;
    loop {
        let url = c.list_page_url(prefix, token.as_deref());
        let r = c
            .exec(
                &mut conn,
                rusty_s3::Method::Get,
                url,
                &[],
                Payload::empty(),
                Sink::Keep,
            )
            .await
            .map_err(|e| format!("listing '{prefix}': {e}"))?;
        if let Some(f) = r.failure {
            return Err(format!("listing '{prefix}': {f}"));
        }
        let text = String::from_utf8_lossy(&r.kept);
        let page = rusty_s3::actions::ListObjectsV2::parse_response(&text)
            .map_err(|e| format!("listing '{prefix}': not a ListObjectsV2 answer ({e})"))?;
        for o in page.contents {
            out.insert(o.key, o.size.unwrap_or(0));
        }
        if out.len() > MAX_OBJECTS {
            return Err(format!(
                "listing '{prefix}': more than {MAX_OBJECTS} objects"
            ));
        }
        match page.next_continuation_token {
            Some(t) if !t.is_empty() => token = Some(t),
            _ => return Ok(out),
        }
    }
}

/// Copies `files` (each a local file and its key) to the bucket, leaving
/// out those whose key is there with the file's size.
pub async fn upload(c: &S3Client, files: &[(PathBuf, String)]) -> Result<Copied, String> {
    // What is there already: the listing of the keys' common start.
    let common = common_prefix(files.iter().map(|(_, k)| k.as_str()));
    let there = list(c, &common).await?;
    let mut conn = c.connect().await.map_err(|e| e.to_string())?;
    let mut done = Copied {
        files: files.len(),
        ..Copied::default()
    };
    for (path, key) in files {
        let at = |e: String| format!("{} -> {key}: {e}", path.display());
        let len = std::fs::metadata(path)
            .map_err(|e| at(e.to_string()))?
            .len();
        if there.get(key) == Some(&len) {
            continue;
        }
        if len > SINGLE_MAX {
            put_parts(c, &mut conn, path, key, len).await.map_err(at)?;
        } else {
            let data = wirebench_core::files::read_regular(path, SINGLE_MAX)
                .map_err(|e| at(e.to_string()))?;
            let r = c
                .exec(
                    &mut conn,
                    rusty_s3::Method::Put,
                    c.put_url(key),
                    &[],
                    Payload::bytes(Bytes::from(data)),
                    Sink::Keep,
                )
                .await
                .map_err(|e| at(e.to_string()))?;
            if let Some(f) = r.failure {
                return Err(at(f));
            }
        }
        done.sent += 1;
        done.bytes += len;
    }
    Ok(done)
}

/// A large file in parts, one at a time (read from the file as sent);
/// aborted (its parts freed) when one fails.
async fn put_parts(
    c: &S3Client,
    conn: &mut super::client::HttpConn,
    path: &Path,
    key: &str,
    len: u64,
) -> Result<(), String> {
    let post = |url| (rusty_s3::Method::Post, url);
    let (m, url) = post(c.create_multipart_url(key));
    let r = c
        .exec(conn, m, url, &[], Payload::empty(), Sink::Keep)
        .await
        .map_err(|e| e.to_string())?;
    if let Some(f) = r.failure {
        return Err(f);
    }
    let Some(id) = xml_value(&String::from_utf8_lossy(&r.kept), "UploadId") else {
        return Err("no UploadId in the CreateMultipartUpload answer".into());
    };
    let parts = async {
        let mut f = std::fs::File::open(path).map_err(|e| e.to_string())?;
        let mut etags = Vec::new();
        for n in 0..len.div_ceil(PART) {
            let size = PART.min(len - n * PART);
            let mut buf = vec![0u8; usize::try_from(size).unwrap_or(0)];
            f.seek(SeekFrom::Start(n * PART))
                .and_then(|_| f.read_exact(&mut buf))
                .map_err(|e| format!("reading part {}: {e}", n + 1))?;
            let part = u16::try_from(n + 1).map_err(|_| "more than 65535 parts".to_string())?;
            let r = c
                .exec(
                    conn,
                    rusty_s3::Method::Put,
                    c.upload_part_url(key, part, &id),
                    &[],
                    Payload::bytes(Bytes::from(buf)),
                    Sink::Keep,
                )
                .await
                .map_err(|e| e.to_string())?;
            match (r.failure, r.etag) {
                (None, Some(e)) => etags.push(e),
                (None, None) => return Err("no ETag in an UploadPart answer".to_string()),
                (Some(f), _) => return Err(f),
            }
        }
        let (url, body) = c.complete_multipart(key, &id, &etags);
        let r = c
            .exec(
                conn,
                rusty_s3::Method::Post,
                url,
                &[],
                Payload::text(body),
                Sink::Keep,
            )
            .await
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&r.kept);
        match r.failure {
            Some(f) => Err(f),
            // An S3 quirk: a completion can fail after a 200, with an <Error> body.
            None if text.contains("<Error>") => Err(format!(
                "200 {}",
                xml_value(&text, "Code").unwrap_or_default()
            )),
            None => Ok(()),
        }
    };
    let done = parts.await;
    if done.is_err() {
        // Best effort: the parts sent are freed.
        let url = c.abort_multipart_url(key, &id);
        let _ = c
            .exec(
                conn,
                rusty_s3::Method::Delete,
                url,
                &[],
                Payload::empty(),
                Sink::Discard,
            )
            .await;
    }
    done
}

/// Brings every object under `prefix/` into `dir` (its path under the
/// prefix), leaving out those already here with the object's size. Each
/// comes into a temporary file renamed when whole; a key that is not a
/// plain relative path (`..`, an absolute one) is refused.
pub async fn download(c: &S3Client, prefix: &str, dir: &Path) -> Result<Copied, String> {
    let start = match prefix {
        "" => String::new(),
        p => format!("{p}/"),
    };
    let objects = list(c, &start).await?;
    let mut conn = c.connect().await.map_err(|e| e.to_string())?;
    let mut done = Copied {
        files: objects.len(),
        ..Copied::default()
    };
    for (key, size) in &objects {
        let rel = Path::new(&key[start.len()..]);
        if rel.as_os_str().is_empty()
            || !rel.components().all(|c| matches!(c, Component::Normal(_)))
        {
            return Err(format!("{key}: not a plain path under '{start}' (refused)"));
        }
        let to = dir.join(rel);
        if std::fs::metadata(&to).is_ok_and(|m| m.is_file() && m.len() == *size) {
            continue;
        }
        let at = |e: String| format!("{key} -> {}: {e}", to.display());
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| at(e.to_string()))?;
        }
        let part = to.with_file_name(format!(
            ".{}.part",
            to.file_name().unwrap_or_default().to_string_lossy()
        ));
        let mut f = std::fs::File::create(&part).map_err(|e| at(e.to_string()))?;
        let mut got = 0u64;
        while got < *size {
            let last = (got + RANGE).min(*size) - 1;
            let r = c
                .exec(
                    &mut conn,
                    rusty_s3::Method::Get,
                    c.get_url(key),
                    &[("Range", format!("bytes={got}-{last}"))],
                    Payload::empty(),
                    Sink::Keep,
                )
                .await
                .map_err(|e| at(e.to_string()))?;
            if let Some(fail) = r.failure {
                let _ = std::fs::remove_file(&part);
                return Err(at(fail));
            }
            if r.kept.len() as u64 != last + 1 - got {
                let _ = std::fs::remove_file(&part);
                return Err(at(format!(
                    "asked for bytes {got}-{last}, got {} (status {}): the server does not serve ranges",
                    r.kept.len(),
                    r.status
                )));
            }
            f.write_all(&r.kept).map_err(|e| at(e.to_string()))?;
            got = last + 1;
        }
        f.sync_all()
            .and_then(|_| std::fs::rename(&part, &to))
            .map_err(|e| at(e.to_string()))?;
        done.sent += 1;
        done.bytes += size;
    }
    Ok(done)
}

/// The longest common start of `keys`, cut back to a whole '/'-segment.
fn common_prefix<'a>(mut keys: impl Iterator<Item = &'a str>) -> String {
    let Some(first) = keys.next() else {
        return String::new();
    };
    let mut common = first.to_string();
    for k in keys {
        let n = common
            .char_indices()
            .zip(k.chars())
            .take_while(|((_, a), b)| a == b)
            .count();
        common.truncate(
            common
                .char_indices()
                .nth(n)
                .map_or(common.len(), |(i, _)| i),
        );
    }
    match common.rfind('/') {
        Some(i) => common[..=i].to_string(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_is_of_the_keys_whole_common_directories() {
        let p = |k: &[&str]| common_prefix(k.iter().copied());
        assert_eq!(p(&["a/b/run.json", "a/b/c/x", "a/bx/y"]), "a/");
        assert_eq!(p(&["a/b/run.json", "a/b/c/x"]), "a/b/");
        assert_eq!(p(&["run.json"]), "");
        assert_eq!(p(&[]), "");
    }
}
