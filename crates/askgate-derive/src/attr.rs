//! Reading `#[ask(...)]` attributes: each place (struct, field, enum,
//! variant) accepts its own keys, and anything else is an error that names
//! the key and lists the accepted ones.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, LitChar, LitInt, LitStr, Path};

/// The keys each place accepts, for messages.
pub(crate) const STRUCT_KEYS: &str = "message, crate";
pub(crate) const FIELD_KEYS: &str = "title, description, rename, default, min, max, min_length, \
     max_length, format, min_items, max_items, zone, secret";
pub(crate) const ENUM_KEYS: &str = "crate";
pub(crate) const VARIANT_KEYS: &str = "label, value, hotkey";

/// Call `each` with every `key = value` or flag inside the `#[ask(...)]`
/// attributes among `attrs`.
pub(crate) fn each_key(
    attrs: &[Attribute],
    mut each: impl FnMut(&str, &ParseNestedMeta<'_>) -> syn::Result<()>,
) -> syn::Result<()> {
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("ask")) {
        attr.parse_nested_meta(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_else(|| path_text(&meta.path));
            each(&key, &meta)
        })?;
    }
    Ok(())
}

fn path_text(path: &Path) -> String {
    path.segments
        .iter()
        .map(|segment| segment.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// The error for a key the place does not accept.
pub(crate) fn unknown(
    meta: &ParseNestedMeta<'_>,
    key: &str,
    place: &str,
    accepted: &str,
) -> syn::Error {
    meta.error(format!(
        "unknown `ask` attribute `{key}` on {place}; {place} takes: {accepted}"
    ))
}

/// Store a setting once; a second one is an error.
pub(crate) fn once<T>(
    slot: &mut Option<T>,
    key: &str,
    meta: &ParseNestedMeta<'_>,
    value: T,
) -> syn::Result<()> {
    if slot.is_some() {
        return Err(meta.error(format!("`{key}` is given twice; give it once")));
    }
    *slot = Some(value);
    Ok(())
}

/// `key = "text"`.
pub(crate) fn string(meta: &ParseNestedMeta<'_>) -> syn::Result<LitStr> {
    meta.value()?.parse()
}

/// `key = 'c'`.
pub(crate) fn character(meta: &ParseNestedMeta<'_>) -> syn::Result<LitChar> {
    meta.value()?.parse()
}

/// `key = <expression>`.
pub(crate) fn expr(meta: &ParseNestedMeta<'_>) -> syn::Result<Expr> {
    meta.value()?.parse()
}

/// `key = <whole number from 0 to 2^32 - 1>`.
pub(crate) fn count(meta: &ParseNestedMeta<'_>, key: &str) -> syn::Result<u32> {
    let lit: LitInt = meta.value()?.parse()?;
    lit.base10_parse::<u32>().map_err(|_| {
        syn::Error::new(
            lit.span(),
            format!("`{key}` takes a whole number from 0 to {}", u32::MAX),
        )
    })
}

/// A flag (`secret`): no value.
pub(crate) fn flag(meta: &ParseNestedMeta<'_>, key: &str) -> syn::Result<Span> {
    if meta.input.peek(syn::Token![=]) {
        return Err(meta.error(format!("`{key}` takes no value: write `#[ask({key})]`")));
    }
    Ok(meta.path.span())
}

/// `crate = "path"`: where the generated code finds askgate-core.
pub(crate) fn krate(meta: &ParseNestedMeta<'_>) -> syn::Result<Path> {
    string(meta)?.parse()
}
