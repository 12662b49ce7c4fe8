//! Redis's protocol (RESP2 and RESP3): commands written as arrays of bulk
//! strings, and an incremental reader of replies that allocates nothing
//! for the replies a benchmark gets (status, integer, bulk, null) and skips
//! whole any other (aggregates, RESP3 push messages and attributes).

use super::reply::{Answer, ReplyError};

/// Deepest nesting of aggregates read; deeper is a protocol error.
const MAX_DEPTH: usize = 32;
/// Longest status or error line read.
pub const MAX_LINE: usize = 64 * 1024;
/// The most elements one aggregate reply (arrays, maps, sets, nested)
/// holds in all: the replies to a run's commands (GET, SET, HELLO...) hold
/// a few.
const MAX_ELEMENTS: i64 = 4096;
/// Bytes of an aggregate reply beyond its values'.
const MAX_AGGREGATE_BYTES: usize = 1 << 20;

/// Appends a command (an array of bulk strings) to `out`.
pub fn command(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.push(b'*');
    push_num(out, args.len());
    for a in args {
        out.push(b'$');
        push_num(out, a.len());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

fn push_num(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// The line at the start of `buf` (without its CRLF) and the bytes it takes;
/// None when incomplete.
fn line(buf: &[u8]) -> Result<Option<(&[u8], usize)>, ReplyError> {
    match buf.windows(2).position(|w| w == b"\r\n") {
        Some(i) => Ok(Some((&buf[..i], i + 2))),
        None if buf.len() > MAX_LINE => Err(ReplyError::Protocol(format!(
            "a reply line longer than {MAX_LINE} bytes"
        ))),
        None => Ok(None),
    }
}

fn number(text: &[u8]) -> Result<i64, ReplyError> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| {
            ReplyError::Protocol(format!(
                "'{}' where a number was expected",
                String::from_utf8_lossy(&text[..text.len().min(40)])
            ))
        })
}

/// Reads the reply at the start of `buf`: the answer and the bytes it
/// takes, or None when more bytes are needed. A bulk string longer than
/// `max_bulk` is a protocol error (memory stays bounded whatever the peer
/// sends). Push messages and attributes come back as `Answer::Skip`.
pub fn parse(buf: &[u8], max_bulk: usize) -> Result<Option<(Answer<'_>, usize)>, ReplyError> {
    let Some(&kind) = buf.first() else {
        return Ok(None);
    };
    let Some((head, n)) = line(&buf[1..])? else {
        return Ok(None);
    };
    let n = n + 1;
    Ok(Some(match kind {
        b'+' => (Answer::Done, n),
        b'-' => (Answer::Failed(cause(head)), n),
        b':' => (Answer::Int(number(head)?), n),
        b'_' => (Answer::Miss, n),
        b',' | b'#' | b'(' => (Answer::Done, n),
        b'$' | b'=' | b'!' => {
            let len = number(head)?;
            if len < 0 {
                return Ok(Some((Answer::Miss, n)));
            }
            let len = usize::try_from(len).unwrap_or(usize::MAX);
            if len > max_bulk {
                return Err(ReplyError::Protocol(format!(
                    "a reply of {len} bytes, more than any value this run writes ({max_bulk})"
                )));
            }
            if buf.len() < n + len + 2 {
                return Ok(None);
            }
            if &buf[n + len..n + len + 2] != b"\r\n" {
                return Err(ReplyError::Protocol(
                    "a bulk string not ended by CRLF".into(),
                ));
            }
            let body = &buf[n..n + len];
            let answer = match kind {
                b'!' => Answer::Failed(cause(body)),
                // Verbatim strings start with their format: "txt:".
                b'=' => Answer::Value(body.get(4..).unwrap_or_default()),
                _ => Answer::Value(body),
            };
            (answer, n + len + 2)
        }
        b'*' | b'%' | b'~' | b'>' | b'|' => {
            let Some(end) = skip(buf, 0, max_bulk)? else {
                // What an aggregate may hold in all: the replies to this
                // run's commands hold at most one value and a few fields.
                let most = max_bulk.saturating_add(MAX_AGGREGATE_BYTES);
                if buf.len() > most {
                    return Err(ReplyError::Protocol(format!(
                        "an aggregate reply longer than {most} bytes, more than any reply to this run's commands"
                    )));
                }
                return Ok(None);
            };
            let answer = if matches!(kind, b'>' | b'|') {
                Answer::Skip
            } else {
                Answer::Done
            };
            (answer, end)
        }
        other => {
            return Err(ReplyError::Protocol(format!(
                "a reply starting with byte 0x{other:02x}: not RESP"
            )));
        }
    }))
}

/// The end of the value that starts at `at` (any type, nested to
/// `MAX_DEPTH`), or None when incomplete.
fn skip(buf: &[u8], at: usize, max_bulk: usize) -> Result<Option<usize>, ReplyError> {
    let mut stack: Vec<i64> = Vec::new(); // elements left at each level
    let mut pos = at;
    let mut elements = 0i64;
    loop {
        let Some(&kind) = buf.get(pos) else {
            return Ok(None);
        };
        let Some((head, n)) = line(&buf[pos + 1..])? else {
            return Ok(None);
        };
        pos += 1 + n;
        match kind {
            b'$' | b'=' | b'!' => {
                let len = number(head)?;
                if len >= 0 {
                    let len = usize::try_from(len).unwrap_or(usize::MAX);
                    if len > max_bulk {
                        return Err(ReplyError::Protocol(format!(
                            "a reply of {len} bytes, more than any value this run writes ({max_bulk})"
                        )));
                    }
                    pos += len + 2;
                    if buf.len() < pos {
                        return Ok(None);
                    }
                }
            }
            b'*' | b'%' | b'~' | b'>' | b'|' => {
                let count = number(head)?;
                // Maps and attributes hold pairs.
                let count = if matches!(kind, b'%' | b'|') {
                    count.saturating_mul(2)
                } else {
                    count
                };
                // Inside an aggregate, an attribute and the value it
                // describes make one element (at the top, the value is the
                // reply that follows).
                let count = count + i64::from(kind == b'|' && !stack.is_empty());
                elements = elements.saturating_add(count.max(0));
                if elements > MAX_ELEMENTS {
                    return Err(ReplyError::Protocol(format!(
                        "an aggregate reply of {count} elements, more than any reply to this run's commands ({MAX_ELEMENTS})"
                    )));
                }
                if count > 0 {
                    if stack.len() >= MAX_DEPTH {
                        return Err(ReplyError::Protocol(format!(
                            "replies nested deeper than {MAX_DEPTH}"
                        )));
                    }
                    stack.push(count);
                    continue;
                }
            }
            b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => {}
            other => {
                return Err(ReplyError::Protocol(format!(
                    "a reply starting with byte 0x{other:02x}: not RESP"
                )));
            }
        }
        // One element done: close the levels it completes.
        loop {
            match stack.last_mut() {
                None => return Ok(Some(pos)),
                Some(left) => {
                    *left -= 1;
                    if *left > 0 {
                        break;
                    }
                    stack.pop();
                }
            }
        }
    }
}

/// A server's error as a failure cause: its text, shortened.
fn cause(text: &[u8]) -> String {
    let t = String::from_utf8_lossy(&text[..text.len().min(100)]);
    format!("-{t}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(buf: &[u8]) -> (Answer<'_>, usize) {
        parse(buf, 1 << 20).unwrap().expect("complete")
    }

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        let mut out = Vec::new();
        command(&mut out, &[b"SET", b"k", b"hello"]);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n");
    }

    #[test]
    fn every_reply_type_reads() {
        assert_eq!(one(b"+OK\r\n"), (Answer::Done, 5));
        assert_eq!(
            one(b"-WRONGTYPE Operation against a key\r\n").0,
            Answer::Failed("-WRONGTYPE Operation against a key".into())
        );
        assert_eq!(one(b":42\r\n"), (Answer::Int(42), 5));
        assert_eq!(one(b"$-1\r\n"), (Answer::Miss, 5));
        assert_eq!(one(b"_\r\n"), (Answer::Miss, 3));
        assert_eq!(one(b"$5\r\nhello\r\n"), (Answer::Value(b"hello"), 11));
        assert_eq!(one(b"$0\r\n\r\n"), (Answer::Value(b""), 6));
        assert_eq!(one(b"=8\r\ntxt:abcd\r\n"), (Answer::Value(b"abcd"), 14));
        // HELLO 3's map, a push message, an attribute before its value.
        let hello = b"%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n";
        assert_eq!(one(hello), (Answer::Done, hello.len()));
        let push = b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$2\r\nhi\r\n";
        assert_eq!(one(push), (Answer::Skip, push.len()));
        let nested = b"*2\r\n*1\r\n:1\r\n%1\r\n+a\r\n*0\r\n";
        assert_eq!(one(nested), (Answer::Done, nested.len()));
        // An attribute inside an array goes with the element after it.
        let attr = b"*2\r\n|1\r\n+ttl\r\n:3\r\n:1\r\n:2\r\n";
        assert_eq!(one(attr), (Answer::Done, attr.len()));
        // At the top, the attribute is skipped and the reply read next.
        let top = b"|1\r\n+ttl\r\n:3\r\n:7\r\n";
        let (a, n) = one(top);
        assert_eq!(a, Answer::Skip);
        assert_eq!(one(&top[n..]), (Answer::Int(7), 4));
    }

    #[test]
    fn a_partial_reply_waits_for_more() {
        let full = b"$5\r\nhello\r\n*2\r\n:1\r\n:2\r\n";
        for cut in 0..11 {
            assert_eq!(parse(&full[..cut], 100).unwrap(), None, "cut at {cut}");
        }
        let (_, n) = one(full);
        for cut in n..full.len() {
            assert_eq!(parse(&full[n..cut], 100).unwrap(), None, "cut at {cut}");
        }
        assert_eq!(one(&full[n..]).1, full.len() - n);
    }

    #[test]
    fn hostile_replies_are_refused_not_buffered() {
        assert!(parse(b"$999999999\r\n", 1 << 20).is_err());
        assert!(parse(&vec![b'+'; MAX_LINE + 2], 1 << 20).is_err());
        assert!(parse(b"?what\r\n", 100).is_err());
        assert!(parse(b"$3\r\nabcXY", 100).is_err());
        // Issue 35: an array announced with 10^12 elements, then elements:
        // refused at once, and an aggregate never holds more than a value
        // and 1 MiB.
        let e = parse(b"*1000000000000\r\n:1\r\n:1\r\n", 1 << 20).unwrap_err();
        assert!(e.to_string().contains("1000000000000 elements"), "{e}");
        let mut many = b"*4000\r\n".to_vec();
        many.extend(std::iter::repeat_n(b"+x\r\n".as_slice(), 3000).flatten());
        assert!(
            parse(&many, 1 << 20).unwrap().is_none(),
            "incomplete, under the bounds"
        );
        let mut long = b"*4\r\n".to_vec();
        let bulk = |long: &mut Vec<u8>| {
            long.extend_from_slice(b"$1000000\r\n");
            long.extend(vec![b'x'; 1_000_000]);
            long.extend_from_slice(b"\r\n");
        };
        bulk(&mut long);
        assert!(parse(&long, 1 << 20).unwrap().is_none());
        bulk(&mut long);
        bulk(&mut long);
        let e = parse(&long, 1 << 20).unwrap_err();
        assert!(
            e.to_string().contains("an aggregate reply longer than"),
            "{e}"
        );
        let deep = "*1\r\n".repeat(MAX_DEPTH + 1) + ":1\r\n";
        assert!(parse(deep.as_bytes(), 100).is_err());
        assert!(parse(b":notanumber\r\n", 100).is_err());
    }
}
