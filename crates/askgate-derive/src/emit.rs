//! What both derives share: errors gathered over every field or variant,
//! and the pieces of generated code they both write.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::Path;

/// The errors found across a struct's fields or an enum's variants,
/// reported together so that one build names every one of them.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    /// Add one error to the report.
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(errors) => errors.combine(error),
            None => self.0 = Some(error),
        }
    }

    /// Every error pushed, as one; `Ok` when there were none.
    pub(crate) fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

/// Where the generated code finds askgate-core: the `crate = "..."` path,
/// or `::askgate_core`.
pub(crate) fn krate(path: Option<Path>) -> TokenStream {
    path.map_or_else(|| quote!(::askgate_core), |path| path.to_token_stream())
}

/// An `Option` in the generated code: `Some(value)` or `None`.
pub(crate) fn option(value: Option<impl ToTokens>) -> TokenStream {
    match value {
        Some(value) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    }
}
