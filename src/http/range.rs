//! HTTP Range requests on originals (RFC 9110 section 14): which part of a file of `len`
//! bytes a request asks for. One range (`bytes=a-b`, `bytes=a-`, `bytes=-n`) is served as
//! 206; several ranges get the whole body (200, allowed by the RFC); an unparsable header is
//! ignored (200); a range that starts past the end is 416. `If-Range` with another ETag
//! (or a date: we send no Last-Modified) asks for the whole body. Pure: no I/O.

use axum::http::{HeaderMap, header};

/// What to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// The whole file (200).
    Full,
    /// Bytes `start..=end` (206).
    Part { start: u64, end: u64 },
    /// Nothing of it can be sent (416).
    Unsatisfiable,
}

/// The plan for a request with `headers` on a file of `len` bytes whose ETag is `etag`.
pub fn plan(headers: &HeaderMap, len: u64, etag: &str) -> Plan {
    let Some(range) = headers.get(header::RANGE).and_then(|v| v.to_str().ok()) else {
        return Plan::Full;
    };
    if let Some(if_range) = headers.get(header::IF_RANGE) {
        // Only a strong ETag equal to ours keeps the range (a date never matches here).
        if if_range.to_str().ok().map(str::trim) != Some(etag) {
            return Plan::Full;
        }
    }
    parse(range, len)
}

/// One `bytes=` range of a `len`-byte file.
pub fn parse(value: &str, len: u64) -> Plan {
    let Some(spec) = value.trim().strip_prefix("bytes=") else {
        return Plan::Full;
    };
    if spec.contains(',') {
        return Plan::Full;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return Plan::Full;
    };
    let number = |s: &str| -> Option<u64> {
        let s = s.trim();
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    match (first.trim().is_empty(), number(first), number(last)) {
        // `-n`: the last n bytes.
        (true, _, Some(n)) if n == 0 || len == 0 => Plan::Unsatisfiable,
        (true, _, Some(n)) => Plan::Part {
            start: len.saturating_sub(n),
            end: len - 1,
        },
        (false, Some(start), _) if start >= len => Plan::Unsatisfiable,
        // `a-`: from a to the end.
        (false, Some(start), None) if last.trim().is_empty() => Plan::Part {
            start,
            end: len - 1,
        },
        // `a-b`, b clamped to the end; b before a is invalid, so ignored.
        (false, Some(start), Some(end)) if end >= start => Plan::Part {
            start,
            end: end.min(len - 1),
        },
        _ => Plan::Full,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_and_the_edges() {
        let part = |start, end| Plan::Part { start, end };
        assert_eq!(parse("bytes=0-9", 100), part(0, 9));
        assert_eq!(parse("bytes=90-", 100), part(90, 99));
        assert_eq!(parse("bytes=-10", 100), part(90, 99));
        assert_eq!(parse("bytes=-500", 100), part(0, 99));
        assert_eq!(parse("bytes=50-5000", 100), part(50, 99));
        assert_eq!(parse("bytes=99-99", 100), part(99, 99));
        assert_eq!(parse("bytes=100-", 100), Plan::Unsatisfiable);
        assert_eq!(parse("bytes=100-200", 100), Plan::Unsatisfiable);
        assert_eq!(parse("bytes=-0", 100), Plan::Unsatisfiable);
        assert_eq!(parse("bytes=0-", 0), Plan::Unsatisfiable);
        assert_eq!(parse("bytes=0-1,5-6", 100), Plan::Full);
        for bad in [
            "bytes=9-1",
            "bytes=a-b",
            "items=0-1",
            "bytes=-",
            "bytes=1",
            "bytes=+1-2",
        ] {
            assert_eq!(parse(bad, 100), Plan::Full, "{bad}");
        }
    }

    #[test]
    fn if_range_keeps_the_range_only_for_our_etag() {
        let mut h = HeaderMap::new();
        h.insert(header::RANGE, "bytes=0-0".parse().unwrap());
        assert_eq!(plan(&h, 10, "\"abc\""), Plan::Part { start: 0, end: 0 });
        h.insert(header::IF_RANGE, "\"abc\"".parse().unwrap());
        assert_eq!(plan(&h, 10, "\"abc\""), Plan::Part { start: 0, end: 0 });
        h.insert(header::IF_RANGE, "\"old\"".parse().unwrap());
        assert_eq!(plan(&h, 10, "\"abc\""), Plan::Full);
        h.insert(
            header::IF_RANGE,
            "Sun, 29 Nov 2026 20:00:00 GMT".parse().unwrap(),
        );
        assert_eq!(plan(&h, 10, "\"abc\""), Plan::Full);
    }
}
