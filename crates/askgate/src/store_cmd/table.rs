//! `askgate asks list` as a person reads it: an aligned table with a
//! header, and a sentence when there is nothing to list.

use askgate_store::{AskFilter, AskRow, AskStatus, Page};
use serde_json::json;

use super::{DONE, no_store};
use crate::failure::{Failure, print_json, print_line};

const HEADER: [&str; 7] = [
    "ID",
    "ASKED (UTC)",
    "STATUS",
    "FROM",
    "RISK",
    "FOR",
    "EXPIRES (UTC)",
];

/// `page` as a table, or what `filter` found none of.
pub(super) fn print(page: &Page, filter: &AskFilter) -> Result<(), Failure> {
    if page.asks.is_empty() {
        return print_line(&none_of(filter));
    }
    let rows: Vec<[String; 7]> = page.asks.iter().map(cells).collect();
    let mut widths = HEADER.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    print_line(&line(&HEADER.map(str::to_owned), &widths))?;
    for row in &rows {
        print_line(&line(row, &widths))?;
    }
    if let Some(next) = &page.next {
        print_line(&format!("(more: --after {next})"))?;
    }
    Ok(())
}

/// `asks list` over a store not made yet: nothing, said so.
pub(super) fn nothing_stored(url: &str, filter: &AskFilter, json: bool) -> Result<u8, Failure> {
    if json {
        print_json(&json!({"asks": [], "next": null}))?;
    } else {
        let why = no_store(url).unwrap_or_default();
        print_line(&format!(
            "{} ({why})",
            none_of(filter).trim_end_matches('.')
        ))?;
    }
    Ok(DONE)
}

/// The sentence for an empty listing.
fn none_of(filter: &AskFilter) -> String {
    let narrowed = filter.principal.is_some()
        || filter.server.is_some()
        || filter.tool.is_some()
        || filter.risk.is_some();
    let which = match filter.statuses.as_slice() {
        [] | [AskStatus::Pending] => "pending asks",
        [_] => "asks of that status",
        _ => "settled asks",
    };
    if narrowed {
        format!("No {which} match these filters.")
    } else {
        format!("No {which}.")
    }
}

fn cells(row: &AskRow) -> [String; 7] {
    let minute = |at: jiff::Timestamp| at.strftime("%Y-%m-%d %H:%M").to_string();
    let from = match (&row.ask.server, &row.ask.tool) {
        (Some(server), Some(tool)) => format!("{server}/{tool}"),
        (Some(server), None) => server.clone(),
        _ => "-".into(),
    };
    [
        row.ask.id.clone(),
        minute(row.ask.created_at),
        row.status.as_str().to_owned(),
        from,
        row.ask.risk.clone().unwrap_or_else(|| "-".into()),
        row.ask.principal.clone(),
        row.ask.expires_at.map_or_else(|| "-".into(), minute),
    ]
}

/// `cells` padded to `widths`, two spaces apart, no trailing space.
fn line(cells: &[String; 7], widths: &[usize; 7]) -> String {
    let mut text = String::new();
    for (cell, width) in cells.iter().zip(widths) {
        text.push_str(&format!("{cell:<width$}  "));
    }
    text.trim_end().to_owned()
}
