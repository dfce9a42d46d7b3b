//! The example upstream's lists in pages, as a server with many tools
//! answers them: each page names the next in `nextCursor` (`from-N`, the
//! index it starts at), and a cursor it did not give is refused.

use rmcp::ErrorData;
use rmcp::model::PaginatedRequestParams;

/// The page of `items` that `request`'s cursor starts, of at most `size`
/// (`None`: all at once), and the cursor of the next, if any.
///
/// # Errors
/// A cursor this server did not give (`-32602`, naming it).
pub(super) fn page<T>(
    size: Option<usize>,
    items: Vec<T>,
    request: Option<&PaginatedRequestParams>,
) -> Result<(Vec<T>, Option<String>), ErrorData> {
    let cursor = request.and_then(|r| r.cursor.as_deref());
    let Some(size) = size else {
        return Ok((items, None));
    };
    let start = match cursor {
        None => 0,
        Some(cursor) => cursor
            .strip_prefix("from-")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n < items.len())
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    format!("unknown cursor {cursor:?}: use the nextCursor of a list"),
                    None,
                )
            })?,
    };
    let end = (start + size).min(items.len());
    let next = (end < items.len()).then(|| format!("from-{end}"));
    Ok((items.into_iter().skip(start).take(size).collect(), next))
}

#[cfg(test)]
mod tests {
    use super::page;
    use rmcp::model::PaginatedRequestParams;

    fn from(cursor: Option<String>) -> PaginatedRequestParams {
        let mut request = PaginatedRequestParams::default();
        request.cursor = cursor;
        request
    }

    #[test]
    fn lists_come_in_pages_each_naming_the_next() {
        let items: Vec<u32> = (0..11).collect();
        let mut seen = Vec::new();
        let mut cursor = None;
        let mut pages = 0;
        loop {
            let (page, next) = page(Some(3), items.clone(), Some(&from(cursor))).expect("a page");
            assert!(page.len() <= 3);
            seen.extend(page);
            pages += 1;
            match next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(pages, 4);
        assert_eq!(seen, items);
        let error = page(Some(3), items.clone(), Some(&from(Some("from-99".into()))))
            .expect_err("an unknown cursor");
        assert!(error.message.contains("from-99"), "{}", error.message);
        let (whole, next) = page(None, items.clone(), None).expect("all");
        assert_eq!((whole, next), (items, None));
    }
}
