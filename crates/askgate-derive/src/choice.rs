//! `#[derive(AskChoice)]`: a fieldless enum as the options of a choice.
//!
//! MCP carries choices as strings, so every variant has a string value
//! (its name in snake case unless `#[ask(value = "...")]`) and a label (its
//! name in words unless `#[ask(label = "...")]`). An enum whose variants
//! carry data or numbers cannot be one, and is refused here.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, LitChar, LitStr, Path};

use crate::attr::{self, ENUM_KEYS, VARIANT_KEYS};
use crate::words;

pub(crate) fn derive(input: &DeriveInput) -> syn::Result<TokenStream> {
    let name = &input.ident;
    let Data::Enum(data) = &input.data else {
        return Err(syn::Error::new(
            name.span(),
            "AskChoice is derived for a fieldless enum: each variant is one option of the choice (derive AskForm on a struct)",
        ));
    };
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new(
            input.generics.span(),
            "AskChoice is derived for an enum without generic parameters: its options are fixed strings",
        ));
    }
    let mut krate: Option<Path> = None;
    attr::each_key(&input.attrs, |key, meta| match key {
        "crate" => attr::once(&mut krate, key, meta, attr::krate(meta)?),
        _ => Err(attr::unknown(meta, key, "an enum", ENUM_KEYS)),
    })?;
    let krate = krate.map_or_else(|| quote!(::askgate_core), |path| path.to_token_stream());
    if data.variants.is_empty() {
        return Err(syn::Error::new(
            name.span(),
            "AskChoice needs at least one variant: a choice without options cannot be answered",
        ));
    }

    let mut errors: Option<syn::Error> = None;
    let mut push = |error: syn::Error| match &mut errors {
        Some(errors) => errors.combine(error),
        None => errors = Some(error),
    };
    let mut variants = Vec::new();
    let mut values: Vec<String> = Vec::new();
    for variant in &data.variants {
        let ident = &variant.ident;
        if !matches!(variant.fields, Fields::Unit) {
            push(syn::Error::new(
                variant.fields.span(),
                format!(
                    "variant `{ident}` carries data, and an AskChoice option cannot: MCP choices are plain strings from a fixed set; make `{ident}` a unit variant (or ask for its data in fields of the form)"
                ),
            ));
            continue;
        }
        if let Some((_, discriminant)) = &variant.discriminant {
            push(syn::Error::new(
                discriminant.span(),
                format!(
                    "variant `{ident}` has a number value, and an AskChoice option cannot: MCP choices are strings (its schema has no number enums); remove `= {}` and, if that text must be the answer, write `#[ask(value = \"{}\")]`",
                    discriminant.to_token_stream(),
                    discriminant.to_token_stream(),
                ),
            ));
            continue;
        }
        let mut label: Option<LitStr> = None;
        let mut value: Option<LitStr> = None;
        let mut hotkey: Option<LitChar> = None;
        let read = attr::each_key(&variant.attrs, |key, meta| match key {
            "label" => attr::once(&mut label, key, meta, attr::string(meta)?),
            "value" => attr::once(&mut value, key, meta, attr::string(meta)?),
            "hotkey" => attr::once(&mut hotkey, key, meta, attr::character(meta)?),
            _ => Err(attr::unknown(meta, key, "a variant", VARIANT_KEYS)),
        });
        if let Err(error) = read {
            push(error);
            continue;
        }
        let rust_name = ident.unraw().to_string();
        let (value, value_span) = match &value {
            Some(value) => (value.value(), value.span()),
            None => (words::snake_case(&rust_name), ident.span()),
        };
        if value.trim().is_empty() {
            push(syn::Error::new(
                value_span,
                "an option's value cannot be blank: a blank answer means \"left empty\"",
            ));
            continue;
        }
        if values.contains(&value) {
            push(syn::Error::new(
                value_span,
                format!(
                    "two variants have the value {value:?}; each option's value must be unique"
                ),
            ));
            continue;
        }
        values.push(value.clone());
        let label = label
            .as_ref()
            .map_or_else(|| words::sentence(&rust_name), LitStr::value);
        let hotkey = match &hotkey {
            Some(key) => quote!(::core::option::Option::Some(#key)),
            None => quote!(::core::option::Option::None),
        };
        variants.push((ident, value, label, hotkey));
    }
    if let Some(errors) = errors {
        return Err(errors);
    }

    let options = variants.iter().map(|(_, value, label, hotkey)| {
        quote! {
            #krate::ChoiceOption {
                value: ::std::string::String::from(#value),
                label: ::std::string::String::from(#label),
                hotkey: #hotkey,
            }
        }
    });
    let from_choice = variants
        .iter()
        .map(|(ident, value, _, _)| quote!(#value => ::core::option::Option::Some(Self::#ident)));
    let value_of = variants
        .iter()
        .map(|(ident, value, _, _)| quote!(Self::#ident => #value));
    Ok(quote! {
        impl #krate::AskChoice for #name {
            fn options() -> ::std::vec::Vec<#krate::ChoiceOption> {
                ::std::vec![#(#options),*]
            }

            fn from_choice(value: &str) -> ::core::option::Option<Self> {
                match value {
                    #(#from_choice,)*
                    _ => ::core::option::Option::None,
                }
            }

            fn value(&self) -> &'static str {
                match self {
                    #(#value_of,)*
                }
            }
        }

        impl #krate::AskField for #name {
            type Default = Self;

            fn kind() -> #krate::FieldKind {
                #krate::__private::choice_kind::<Self>()
            }

            fn from_value(
                value: &#krate::Value,
                _zone: #krate::__private::Zone<'_>,
            ) -> ::core::option::Option<Self> {
                #krate::__private::choice_from_value(value)
            }

            fn default_json(default: Self) -> #krate::__private::Json {
                #krate::__private::choice_json(&default)
            }
        }
    })
}
