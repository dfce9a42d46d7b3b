//! Reading the inbox's pages as a browser would: the cookies a response
//! sets, a form's hidden inputs, and the error shown beside a field.

use axum::http::HeaderMap;
use axum::http::header::SET_COOKIE;

/// The `name=value` of the cookie `name` that `headers` (a response's)
/// set, if they set it.
///
/// # Example
/// ```
/// let mut headers = axum::http::HeaderMap::new();
/// headers.append("set-cookie", "a=1; Path=/".parse().unwrap());
/// assert_eq!(askgate_testkit::page::set_cookie(&headers, "a").as_deref(), Some("a=1"));
/// assert_eq!(askgate_testkit::page::set_cookie(&headers, "b"), None);
/// ```
pub fn set_cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .map(|v| v.split(';').next().unwrap_or_default().to_owned())
}

/// The value of the hidden input `name` on the page `html`; fails the
/// test when the page has none.
pub fn hidden(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let Some(start) = html.find(&marker) else {
        panic!("no input {name:?} on the page: {html}");
    };
    html[start + marker.len()..]
        .split('"')
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// The error shown beside the form field `id` on the page `html` (empty
/// when there is none); fails the test when the page has no such field.
pub fn field_error(html: &str, id: &str) -> String {
    let Some(rest) = html.split(&format!("id=\"err-{id}\"")).nth(1) else {
        panic!("no field {id:?} on the page: {html}");
    };
    let element = rest.split("</p>").next().unwrap_or_default();
    element
        .split_once('>')
        .map_or(element, |(_, text)| text)
        .to_owned()
}
