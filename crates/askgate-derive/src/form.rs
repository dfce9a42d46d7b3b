//! `#[derive(AskForm)]`: a struct with named fields as a form, and its
//! settled values back as the struct.
//!
//! The macro only reads names and attributes. Which Rust type is which kind
//! of field is decided by askgate-core's `AskField`, so a type MCP cannot
//! carry fails where the field is declared, with that trait's message; the
//! shapes the macro can recognise by sight (maps, tuples, arrays,
//! references) are refused here with a message of their own.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::ext::IdentExt;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::token::Comma;
use syn::{
    Data, DeriveInput, Expr, Fields, GenericArgument, Ident, LitStr, Path, PathArguments, Type,
};

use crate::attr::{self, FIELD_KEYS, STRUCT_KEYS};
use crate::emit::{self, Errors};
use crate::words;

/// What the struct's own `#[ask(...)]` says.
struct FormAttrs {
    message: Option<LitStr>,
    krate: Option<Path>,
}

/// What a field's `#[ask(...)]` says.
#[derive(Default)]
struct FieldAttrs {
    title: Option<LitStr>,
    description: Option<LitStr>,
    rename: Option<LitStr>,
    default: Option<Expr>,
    min: Option<Expr>,
    max: Option<Expr>,
    min_length: Option<(u32, Span)>,
    max_length: Option<(u32, Span)>,
    format: Option<(TokenStream, Span)>,
    min_items: Option<(u32, Span)>,
    max_items: Option<(u32, Span)>,
    zone: Option<LitStr>,
    secret: Option<Span>,
}

pub(crate) fn derive(input: &DeriveInput) -> syn::Result<TokenStream> {
    let name = &input.ident;
    let fields = named_fields(input)?;
    let attrs = form_attrs(input)?;
    let krate = emit::krate(attrs.krate);
    let Some(message) = attrs.message else {
        return Err(syn::Error::new(
            name.span(),
            "AskForm needs the sentence the person reads: add `#[ask(message = \"...\")]` to the struct",
        ));
    };
    if fields.is_empty() {
        return Err(syn::Error::new(
            name.span(),
            "AskForm needs at least one field: a form without fields asks nothing",
        ));
    }

    let mut errors = Errors::default();
    let mut declared = Vec::new();
    let mut reads = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    for field in fields {
        let Some(ident) = &field.ident else { continue };
        match form_field(&krate, ident, field, &ids) {
            Ok((id, declare, read)) => {
                ids.push(id);
                declared.push(declare);
                reads.push(read);
            }
            Err(error) => errors.push(error),
        }
    }
    errors.finish()?;

    Ok(quote! {
        impl #krate::AskForm for #name {
            fn form() -> #krate::Form {
                #krate::__private::form(#message, ::std::vec![#(#declared),*])
            }

            fn from_values(
                __askgate_values: &#krate::Values,
            ) -> ::core::result::Result<Self, #krate::ValuesMismatch> {
                ::core::result::Result::Ok(Self { #(#reads),* })
            }
        }
    })
}

/// The struct's named fields; an error when it has generic parameters, or
/// is not a struct with named fields.
fn named_fields(input: &DeriveInput) -> syn::Result<&Punctuated<syn::Field, Comma>> {
    let name = &input.ident;
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new(
            input.generics.span(),
            "AskForm is derived for a struct without generic parameters: a form's fields have fixed types",
        ));
    }
    match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(fields) => Ok(&fields.named),
            _ => Err(syn::Error::new(
                name.span(),
                "AskForm is derived for a struct with named fields: each field is one question, and its name is the answer's key",
            )),
        },
        _ => Err(syn::Error::new(
            name.span(),
            "AskForm is derived for a struct with named fields: a form is a flat list of named fields (derive AskChoice on an enum of options)",
        )),
    }
}

/// One field `ident`: its id, the expression declaring it, and the one
/// reading its value back into the struct; an error when its type is a
/// shape MCP cannot carry, its attributes are wrong, or its id is not
/// usable or is taken by a field before it (`ids`).
fn form_field(
    krate: &TokenStream,
    ident: &Ident,
    field: &syn::Field,
    ids: &[String],
) -> syn::Result<(String, TokenStream, TokenStream)> {
    let ty = &field.ty;
    flat_type(ty)?;
    let attrs = field_attrs(&field.attrs)?;
    let rust_name = ident.unraw().to_string();
    let (id, id_span) = match &attrs.rename {
        Some(rename) => (rename.value(), rename.span()),
        None => (rust_name.clone(), ident.span()),
    };
    check_id(&id, id_span)?;
    if ids.contains(&id) {
        return Err(syn::Error::new(
            id_span,
            format!("two fields have the id {id:?}; ids must be unique"),
        ));
    }
    let title = attrs
        .title
        .as_ref()
        .map_or_else(|| words::sentence(&rust_name), LitStr::value);
    let declared = declare(krate, ty, &id, &title, &attrs);
    let zone = emit::option(attrs.zone.as_ref());
    let read = quote_spanned! {ty.span()=>
        #ident: <#ty as #krate::AskField>::read(__askgate_values, #id, #zone)?
    };
    Ok((id, declared, read))
}

/// The expression building one field.
fn declare(
    krate: &TokenStream,
    ty: &Type,
    id: &str,
    title: &str,
    attrs: &FieldAttrs,
) -> TokenStream {
    let private = quote!(#krate::__private);
    let mut steps = Vec::new();
    if let Some(description) = &attrs.description {
        steps.push(quote! {
            __askgate_field.description = ::core::option::Option::Some(::std::string::String::from(#description));
        });
    }
    if let Some(span) = attrs.secret {
        steps.push(quote_spanned! {span=> __askgate_field.sensitive = true; });
    }
    for (bound, function) in [(&attrs.min, quote!(min)), (&attrs.max, quote!(max))] {
        if let Some(expr) = bound {
            steps.push(quote_spanned! {expr.span()=>
                #private::#function::<#ty>(&mut __askgate_field, #expr);
            });
        }
    }
    steps.extend(counts(
        &private,
        ty,
        &quote!(length),
        attrs.min_length,
        attrs.max_length,
    ));
    if let Some((format, span)) = &attrs.format {
        steps.push(quote_spanned! {*span=>
            #private::format::<#ty>(&mut __askgate_field, #krate::TextFormat::#format);
        });
    }
    steps.extend(counts(
        &private,
        ty,
        &quote!(items),
        attrs.min_items,
        attrs.max_items,
    ));
    if let Some(zone) = &attrs.zone {
        steps.push(quote_spanned! {zone.span()=>
            #private::zone::<#ty>(&mut __askgate_field, #zone);
        });
    }
    if let Some(default) = &attrs.default {
        steps.push(quote_spanned! {default.span()=>
            #private::default::<#ty>(&mut __askgate_field, #default);
        });
    }
    let new = quote_spanned! {ty.span()=>
        #private::field(
            #id,
            #title,
            <#ty as #krate::AskField>::REQUIRED,
            <#ty as #krate::AskField>::kind(),
        )
    };
    quote! {{
        #[allow(unused_mut)]
        let mut __askgate_field = #new;
        #(#steps)*
        __askgate_field
    }}
}

/// The step setting a pair of count bounds (`min_length` and `max_length`,
/// or `min_items` and `max_items`) through `function`, when either is
/// given; spanned at the first one given.
fn counts(
    private: &TokenStream,
    ty: &Type,
    function: &TokenStream,
    min: Option<(u32, Span)>,
    max: Option<(u32, Span)>,
) -> Option<TokenStream> {
    let span = min.or(max)?.1;
    let (min, max) = (
        emit::option(min.map(|(n, _)| n)),
        emit::option(max.map(|(n, _)| n)),
    );
    Some(quote_spanned! {span=>
        #private::#function::<#ty>(&mut __askgate_field, #min, #max);
    })
}

fn form_attrs(input: &DeriveInput) -> syn::Result<FormAttrs> {
    let mut message = None;
    let mut krate = None;
    attr::each_key(&input.attrs, |key, meta| match key {
        "message" => attr::once(&mut message, key, meta, attr::string(meta)?),
        "crate" => attr::once(&mut krate, key, meta, attr::krate(meta)?),
        _ => Err(attr::unknown(meta, key, "a struct", STRUCT_KEYS)),
    })?;
    Ok(FormAttrs { message, krate })
}

fn field_attrs(attrs: &[syn::Attribute]) -> syn::Result<FieldAttrs> {
    let mut out = FieldAttrs::default();
    attr::each_key(attrs, |key, meta| {
        let span = meta.path.span();
        match key {
            "title" => attr::once(&mut out.title, key, meta, attr::string(meta)?),
            "description" => attr::once(&mut out.description, key, meta, attr::string(meta)?),
            "rename" => attr::once(&mut out.rename, key, meta, attr::string(meta)?),
            "default" => attr::once(&mut out.default, key, meta, attr::expr(meta)?),
            "min" => attr::once(&mut out.min, key, meta, attr::expr(meta)?),
            "max" => attr::once(&mut out.max, key, meta, attr::expr(meta)?),
            "min_length" | "max_length" | "min_items" | "max_items" => {
                let slot = match key {
                    "min_length" => &mut out.min_length,
                    "max_length" => &mut out.max_length,
                    "min_items" => &mut out.min_items,
                    _ => &mut out.max_items,
                };
                attr::once(slot, key, meta, (attr::count(meta, key)?, span))
            }
            "zone" => attr::once(&mut out.zone, key, meta, attr::string(meta)?),
            "secret" => attr::once(&mut out.secret, key, meta, attr::flag(meta, key)?),
            "format" => {
                let lit = attr::string(meta)?;
                let format = match lit.value().as_str() {
                    "email" => quote!(Email),
                    "uri" => quote!(Uri),
                    other => {
                        return Err(syn::Error::new(
                            lit.span(),
                            format!(
                                "unknown text format {other:?}; MCP text formats askgate checks: \"email\", \"uri\" (for dates and times use a jiff type)"
                            ),
                        ));
                    }
                };
                attr::once(&mut out.format, key, meta, (format, span))
            }
            _ => Err(attr::unknown(meta, key, "a field", FIELD_KEYS)),
        }
    })?;
    Ok(out)
}

/// Refuse the shapes MCP's flat schema cannot carry that are visible in the
/// type's syntax, anywhere in it (`Option<HashMap<..>>` too). Everything
/// else is left to `AskField`.
fn flat_type(ty: &Type) -> syn::Result<()> {
    const FLAT: &str = "MCP elicitation carries only flat primitive fields";
    let refuse = |what: &str, instead: &str| {
        Err(syn::Error::new_spanned(
            ty,
            format!("{what} cannot be a field of an MCP form: {FLAT}; {instead}"),
        ))
    };
    match ty {
        Type::Tuple(_) => refuse("a tuple", "declare one field per element"),
        Type::Array(_) | Type::Slice(_) => refuse(
            "an array",
            "a list of options is a `Vec` of an `#[derive(AskChoice)]` enum",
        ),
        Type::Reference(_) => refuse(
            "a reference",
            "a form's fields own their values (`String` for text)",
        ),
        Type::Paren(inner) => flat_type(&inner.elem),
        Type::Group(inner) => flat_type(&inner.elem),
        Type::Path(path) => {
            let Some(last) = path.path.segments.last() else {
                return Ok(());
            };
            let name = last.ident.to_string();
            if matches!(name.as_str(), "HashMap" | "BTreeMap" | "IndexMap") {
                return refuse(&format!("a map (`{name}`)"), "declare one field per key");
            }
            if let PathArguments::AngleBracketed(args) = &last.arguments {
                for arg in &args.args {
                    if let GenericArgument::Type(inner) = arg {
                        if name == "Option" && is_option(inner) {
                            return refuse(
                                "an `Option<Option<_>>`",
                                "a field is answered or left empty, and one `Option` says so",
                            );
                        }
                        flat_type(inner)?;
                    }
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn is_option(ty: &Type) -> bool {
    matches!(ty, Type::Path(path) if path.path.segments.last().is_some_and(|s| s.ident == "Option"))
}

/// The same rule as askgate-core's: 1 to 64 characters from A-Z a-z 0-9 _ - .
fn check_id(id: &str, span: Span) -> syn::Result<()> {
    let usable = !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if usable {
        Ok(())
    } else {
        Err(syn::Error::new(
            span,
            format!(
                "field id {id:?} is not usable in MCP: expected 1 to 64 characters from A-Z a-z 0-9 _ - . (rename it with `#[ask(rename = \"...\")]`)"
            ),
        ))
    }
}
