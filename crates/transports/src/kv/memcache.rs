//! memcached's text protocol (get, set, incr) and meta protocol (mg, ms,
//! ma): requests, and an incremental reader of their replies.

use super::reply::{Answer, ReplyError};

/// Longest reply line read.
const MAX_LINE: usize = 8 * 1024;

/// The commands of a key-value operation in one of the two protocols.
pub fn get(out: &mut Vec<u8>, meta: bool, key: &[u8]) {
    out.extend_from_slice(if meta { b"mg " } else { b"get " });
    out.extend_from_slice(key);
    out.extend_from_slice(if meta { b" v\r\n" } else { b"\r\n" });
}

pub fn set(out: &mut Vec<u8>, meta: bool, key: &[u8], value: &[u8]) {
    out.extend_from_slice(if meta { b"ms " } else { b"set " });
    out.extend_from_slice(key);
    let len = value.len().to_string();
    if meta {
        out.push(b' ');
    } else {
        out.extend_from_slice(b" 0 0 ");
    }
    out.extend_from_slice(len.as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

pub fn incr(out: &mut Vec<u8>, meta: bool, key: &[u8]) {
    out.extend_from_slice(if meta { b"ma " } else { b"incr " });
    out.extend_from_slice(key);
    out.extend_from_slice(if meta { b"\r\n" } else { b" 1\r\n" });
}

/// Reads the reply at the start of `buf` (either protocol): the answer and
/// the bytes it takes, or None when more bytes are needed. A value longer
/// than `max_value` is a protocol error.
pub fn parse(buf: &[u8], max_value: usize) -> Result<Option<(Answer<'_>, usize)>, ReplyError> {
    let Some(i) = buf.windows(2).position(|w| w == b"\r\n") else {
        if buf.len() > MAX_LINE {
            return Err(ReplyError::Protocol(format!(
                "a reply line longer than {MAX_LINE} bytes"
            )));
        }
        return Ok(None);
    };
    let line = &buf[..i];
    let n = i + 2;
    let mut words = line.split(|&b| b == b' ');
    let first = words.next().unwrap_or_default();
    let answer = match first {
        // Text: VALUE <key> <flags> <bytes> [<cas>], the data, END.
        // Meta: VA <bytes> <flags>*, the data.
        b"VALUE" | b"VA" => {
            let size = if first == b"VALUE" {
                words.nth(2)
            } else {
                words.next()
            };
            let len = size
                .and_then(|s| std::str::from_utf8(s).ok())
                .and_then(|s| s.parse::<usize>().ok())
                .ok_or_else(|| {
                    ReplyError::Protocol(format!(
                        "'{}': a value's header without its size",
                        String::from_utf8_lossy(line)
                    ))
                })?;
            if len > max_value {
                return Err(ReplyError::Protocol(format!(
                    "a value of {len} bytes, more than any value this run writes ({max_value})"
                )));
            }
            let end = if first == b"VALUE" {
                b"\r\nEND\r\n".len()
            } else {
                2
            };
            if buf.len() < n + len + end {
                return Ok(None);
            }
            let trailer: &[u8] = if first == b"VALUE" {
                b"\r\nEND\r\n"
            } else {
                b"\r\n"
            };
            if &buf[n + len..n + len + end] != trailer {
                return Err(ReplyError::Protocol(
                    "a value not followed by its end marker (a get of several keys?)".into(),
                ));
            }
            return Ok(Some((Answer::Value(&buf[n..n + len]), n + len + end)));
        }
        b"END" | b"EN" | b"NOT_FOUND" | b"NF" => Answer::Miss,
        b"STORED" | b"HD" | b"DELETED" | b"TOUCHED" => Answer::Done,
        b"MN" => Answer::Skip,
        b"NOT_STORED" | b"NS" | b"EXISTS" | b"EX" | b"ERROR" | b"CLIENT_ERROR"
        | b"SERVER_ERROR" => {
            Answer::Failed(String::from_utf8_lossy(&line[..line.len().min(100)]).into_owned())
        }
        digits if !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) => {
            Answer::Int(std::str::from_utf8(digits).map_or(0, |d| d.parse().unwrap_or(i64::MAX)))
        }
        _ => {
            return Err(ReplyError::Protocol(format!(
                "'{}': not a memcached reply",
                String::from_utf8_lossy(&line[..line.len().min(60)])
            )));
        }
    };
    Ok(Some((answer, n)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(buf: &[u8]) -> (Answer<'_>, usize) {
        parse(buf, 1 << 20).unwrap().expect("complete")
    }

    #[test]
    fn requests_of_both_protocols() {
        let mut out = Vec::new();
        set(&mut out, false, b"k", b"abc");
        get(&mut out, false, b"k");
        incr(&mut out, false, b"n");
        assert_eq!(out, b"set k 0 0 3\r\nabc\r\nget k\r\nincr n 1\r\n");
        out.clear();
        set(&mut out, true, b"k", b"abc");
        get(&mut out, true, b"k");
        incr(&mut out, true, b"n");
        assert_eq!(out, b"ms k 3\r\nabc\r\nmg k v\r\nma n\r\n");
    }

    #[test]
    fn replies_of_both_protocols() {
        let text = b"VALUE k 0 3\r\nabc\r\nEND\r\n";
        assert_eq!(one(text), (Answer::Value(b"abc"), text.len()));
        assert_eq!(one(b"END\r\n"), (Answer::Miss, 5));
        assert_eq!(one(b"STORED\r\n"), (Answer::Done, 8));
        assert_eq!(one(b"17\r\n"), (Answer::Int(17), 4));
        assert_eq!(one(b"NOT_FOUND\r\n").0, Answer::Miss);
        assert_eq!(
            one(b"SERVER_ERROR out of memory storing object\r\n").0,
            Answer::Failed("SERVER_ERROR out of memory storing object".into())
        );
        let meta = b"VA 3 t\r\nabc\r\n";
        assert_eq!(one(meta), (Answer::Value(b"abc"), meta.len()));
        assert_eq!(one(b"EN\r\n"), (Answer::Miss, 4));
        assert_eq!(one(b"HD\r\n"), (Answer::Done, 4));
        assert_eq!(one(b"NS\r\n").0, Answer::Failed("NS".into()));
    }

    #[test]
    fn partial_and_hostile_replies() {
        let text = b"VALUE k 0 3\r\nabc\r\nEND\r\n";
        for cut in 0..text.len() {
            assert_eq!(parse(&text[..cut], 100).unwrap(), None, "cut at {cut}");
        }
        assert!(parse(b"VALUE k 0 99999999\r\n", 1 << 20).is_err());
        assert!(parse(b"VALUE k 0 3\r\nabcXXXXXXX", 100).is_err());
        assert!(parse(b"HTTP/1.1 400 Bad Request\r\n", 100).is_err());
        assert!(parse(&vec![b'x'; MAX_LINE + 1], 100).is_err());
    }
}
