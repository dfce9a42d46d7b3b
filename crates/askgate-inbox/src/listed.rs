//! The asks a person's listing holds: those of the principals they answer
//! for, newest first, a page at a time — filtered in the store's query, so
//! a page of 50 is 50 of the person's asks.
//!
//! The store filters on one principal at a time; a person who answers for
//! several gets each principal's page after the same cursor, merged in the
//! store's order (`created_at`, then `id`, both descending), which is the
//! page the store would give for all of them at once.

use askgate_store::{AskFilter, AskRow, Error, Page, Store};

use super::auth::{Person, Whose};

/// The page of asks `filter` holds among those `person` may see, `limit`
/// at a time, after the cursor `after` (a previous page's `next`).
///
/// # Errors
/// [`Error`] when the store fails.
pub(super) async fn asks_for(
    store: &Store,
    person: &Person,
    filter: &AskFilter,
    limit: u32,
    after: Option<&str>,
) -> Result<Page, Error> {
    let principals = match person.whose() {
        Whose::Every => return store.asks_where(filter, limit, after).await,
        Whose::These(principals) => principals,
    };
    let mut asks: Vec<AskRow> = Vec::new();
    let mut more = false;
    for principal in principals {
        let narrowed = AskFilter {
            principal: Some(principal.clone()),
            ..filter.clone()
        };
        let page = store.asks_where(&narrowed, limit, after).await?;
        more |= page.next.is_some();
        asks.extend(page.asks);
    }
    asks.sort_by(|a, b| (b.ask.created_at, &b.ask.id).cmp(&(a.ask.created_at, &a.ask.id)));
    asks.dedup_by(|a, b| a.ask.id == b.ask.id);
    let limit = limit as usize;
    more |= asks.len() > limit;
    asks.truncate(limit);
    let next = if more {
        // The store's cursor: `created_at` in microseconds, then the id.
        asks.last()
            .map(|last| format!("{}/{}", last.ask.created_at.as_microsecond(), last.ask.id))
    } else {
        None
    };
    Ok(Page { asks, next })
}
