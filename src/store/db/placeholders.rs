//! SQLite's `?N` placeholders rewritten to PostgreSQL's `$N`, once per statement and
//! connection (the statement cache keeps the result). Quoted literals ('...'), quoted
//! identifiers ("..."), line comments and block comments are copied as they are, so a `?`
//! inside them stays a `?`. A bare `?` is numbered as SQLite numbers it: one more than the
//! largest number used so far in the statement.
//! Must not import: rusqlite, postgres

/// `sql` with every placeholder outside quotes and comments written `$N`.
pub(crate) fn to_dollars(sql: &str) -> String {
    let bytes = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 8);
    let mut largest = 0u32;
    let mut at = 0;
    let mut copied = 0;
    while at < bytes.len() {
        let skip_to = match bytes[at] {
            b'\'' | b'"' => closing_quote(bytes, at),
            b'-' if bytes.get(at + 1) == Some(&b'-') => line_end(bytes, at),
            b'/' if bytes.get(at + 1) == Some(&b'*') => comment_end(bytes, at),
            b'?' => {
                let digits = bytes[at + 1..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                let number = match sql[at + 1..at + 1 + digits].parse::<u32>() {
                    Ok(n) => n,
                    Err(_) => largest + 1,
                };
                largest = largest.max(number);
                out.push_str(&sql[copied..at]);
                out.push('$');
                out.push_str(&number.to_string());
                copied = at + 1 + digits;
                copied
            }
            _ => at + 1,
        };
        at = skip_to;
    }
    out.push_str(&sql[copied..]);
    out
}

/// Just past the quote that closes the one at `open` (a doubled quote is part of the
/// text: the scan leaves and enters again), or the end of an unclosed one.
fn closing_quote(bytes: &[u8], open: usize) -> usize {
    let quote = bytes[open];
    bytes[open + 1..]
        .iter()
        .position(|&b| b == quote)
        .map_or(bytes.len(), |p| open + 1 + p + 1)
}

fn line_end(bytes: &[u8], start: usize) -> usize {
    bytes[start..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |p| start + p + 1)
}

fn comment_end(bytes: &[u8], start: usize) -> usize {
    bytes[start + 2..]
        .windows(2)
        .position(|w| w == b"*/")
        .map_or(bytes.len(), |p| start + 2 + p + 2)
}

#[cfg(test)]
mod tests {
    use super::to_dollars;

    #[test]
    fn numbered_placeholders_become_dollars() {
        assert_eq!(
            to_dollars("UPDATE t SET a = ?2 WHERE id = ?1 AND b > ?12"),
            "UPDATE t SET a = $2 WHERE id = $1 AND b > $12"
        );
    }

    #[test]
    fn bare_placeholders_are_numbered_as_sqlite_numbers_them() {
        assert_eq!(
            to_dollars("VALUES (?, ?, ?5, ?)"),
            "VALUES ($1, $2, $5, $6)"
        );
        assert_eq!(to_dollars("VALUES (?2, ?)"), "VALUES ($2, $3)");
    }

    #[test]
    fn quotes_and_comments_are_left_alone() {
        let sql = "SELECT '?1 it''s ?', \"odd?2\" -- why ?3\nFROM t /* ?4 */ WHERE a = ?1";
        assert_eq!(
            to_dollars(sql),
            "SELECT '?1 it''s ?', \"odd?2\" -- why ?3\nFROM t /* ?4 */ WHERE a = $1"
        );
    }

    #[test]
    fn unclosed_quotes_and_comments_end_the_statement_unchanged() {
        assert_eq!(to_dollars("SELECT ?1, 'a ?2"), "SELECT $1, 'a ?2");
        assert_eq!(to_dollars("SELECT ?1 /* ?2"), "SELECT $1 /* ?2");
        assert_eq!(to_dollars("SELECT ?1 -- ?2"), "SELECT $1 -- ?2");
    }

    #[test]
    fn dollars_and_multibyte_text_pass_through() {
        assert_eq!(to_dollars("SELECT $1, 'é?', ?2"), "SELECT $1, 'é?', $2");
        assert_eq!(to_dollars(""), "");
    }
}
