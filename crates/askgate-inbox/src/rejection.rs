//! Why the inbox refused a request, as types that carry their HTTP status
//! (as axum's own `JsonRejection` and `FormRejection` do). Each becomes
//! the page a person reads — what was wrong and what was expected, never
//! an answer's value or a token — and tells a caller its
//! [`status`](InboxRejection::status) and a
//! [`body_text`](InboxRejection::body_text) to log.
//!
//! [`InboxRejection`] is any of them, what the inbox's handlers return.

use askgate_core::LinkError;
use askgate_store::AskStatus;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::Markup;

use crate::auth::{CrossOrigin, Session};
use crate::fields::Posted;
use crate::pages;

/// Not signed in (no session cookie, or one that expired or ended): a page
/// sends its reader to sign in (303, coming back after); the event stream
/// is refused with 401.
#[derive(Debug, Clone)]
pub struct SessionRejection {
    /// Where to come back to after signing in; `None` for the event
    /// stream, which is no page to come back to.
    next: Option<String>,
}

impl SessionRejection {
    /// A page's reader, to sign in and come back to `next`.
    pub(crate) fn sign_in(next: &str) -> SessionRejection {
        SessionRejection {
            next: Some(next.to_owned()),
        }
    }

    /// The event stream's reader.
    pub(crate) fn stream() -> SessionRejection {
        SessionRejection { next: None }
    }

    /// 303 See Other for a page (to the sign-in page), 401 Unauthorized for
    /// the event stream.
    pub fn status(&self) -> StatusCode {
        match self.next {
            Some(_) => StatusCode::SEE_OTHER,
            None => StatusCode::UNAUTHORIZED,
        }
    }

    /// What was wrong and what is expected.
    pub fn body_text(&self) -> String {
        "not signed in to the inbox: sign in at /login with your inbox token".to_owned()
    }
}

impl IntoResponse for SessionRejection {
    fn into_response(self) -> Response {
        match &self.next {
            Some(next) => {
                let next: String = url::form_urlencoded::byte_serialize(next.as_bytes()).collect();
                Redirect::to(&format!("/login?next={next}")).into_response()
            }
            None => (self.status(), self.body_text()).into_response(),
        }
    }
}

/// A post of a signed-in person that did not come from the inbox's own
/// form: from another origin, or without this session's CSRF token (403
/// Forbidden). Nothing was changed.
#[derive(Debug, Clone)]
pub struct PostRejection {
    problem: PostProblem,
    session: Box<Session>,
}

#[derive(Debug, Clone)]
enum PostProblem {
    Origin(CrossOrigin),
    Csrf,
}

impl PostRejection {
    pub(crate) fn cross_origin(session: &Session, problem: CrossOrigin) -> PostRejection {
        PostRejection {
            problem: PostProblem::Origin(problem),
            session: Box::new(session.clone()),
        }
    }

    pub(crate) fn csrf(session: &Session) -> PostRejection {
        PostRejection {
            problem: PostProblem::Csrf,
            session: Box::new(session.clone()),
        }
    }

    /// 403 Forbidden.
    pub fn status(&self) -> StatusCode {
        StatusCode::FORBIDDEN
    }

    /// What was wrong and what is expected.
    pub fn body_text(&self) -> String {
        match &self.problem {
            PostProblem::Origin(problem) => problem.message(),
            PostProblem::Csrf => "This form did not carry this session's security token (it is missing, or from another session). Reload the page and try again.".to_owned(),
        }
    }
}

impl IntoResponse for PostRejection {
    fn into_response(self) -> Response {
        let notice = pages::notice("Refused", Some(&self.session), &self.body_text());
        (self.status(), notice).into_response()
    }
}

/// A sign-in refused: the sign-in form again, with a fresh CSRF token and
/// what was wrong — posted from another origin or with another form's
/// token (403), a token that signs nobody in (401), or no randomness for
/// the session (500).
#[derive(Debug, Clone)]
pub struct SignInRejection {
    problem: SignInProblem,
    next: String,
    page: pages::SignInPage,
}

#[derive(Debug, Clone)]
enum SignInProblem {
    Origin(CrossOrigin),
    Csrf,
    UnknownToken,
    NoRandomness,
}

impl SignInRejection {
    pub(crate) fn cross_origin(problem: CrossOrigin, next: &str, page: pages::SignInPage) -> Self {
        Self::new(SignInProblem::Origin(problem), next, page)
    }

    pub(crate) fn csrf(next: &str, page: pages::SignInPage) -> Self {
        Self::new(SignInProblem::Csrf, next, page)
    }

    pub(crate) fn unknown_token(next: &str, page: pages::SignInPage) -> Self {
        Self::new(SignInProblem::UnknownToken, next, page)
    }

    pub(crate) fn no_randomness(next: &str, page: pages::SignInPage) -> Self {
        Self::new(SignInProblem::NoRandomness, next, page)
    }

    fn new(problem: SignInProblem, next: &str, page: pages::SignInPage) -> Self {
        SignInRejection {
            problem,
            next: next.to_owned(),
            page,
        }
    }

    /// 403 Forbidden (origin, CSRF), 401 Unauthorized (the token), 500
    /// Internal Server Error (no randomness).
    pub fn status(&self) -> StatusCode {
        match self.problem {
            SignInProblem::Origin(_) | SignInProblem::Csrf => StatusCode::FORBIDDEN,
            SignInProblem::UnknownToken => StatusCode::UNAUTHORIZED,
            SignInProblem::NoRandomness => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// What was wrong and what is expected (never the token given).
    pub fn body_text(&self) -> String {
        match &self.problem {
            SignInProblem::Origin(problem) => problem.message(),
            SignInProblem::Csrf => {
                "The sign-in form's security token did not match; this form has a fresh one."
                    .to_owned()
            }
            SignInProblem::UnknownToken => "That token signs nobody in.".to_owned(),
            SignInProblem::NoRandomness => {
                "No randomness for a session; nobody was signed in. Try again.".to_owned()
            }
        }
    }
}

impl IntoResponse for SignInRejection {
    fn into_response(self) -> Response {
        let problem = self.body_text();
        pages::sign_in_form(self.page, self.status(), &self.next, Some(&problem))
    }
}

/// An ask this session cannot see: none of this id for them (404 —
/// whether it exists for someone else is not said), or one whose request
/// the inbox cannot show (422).
#[derive(Debug, Clone)]
pub struct AskRejection {
    problem: AskProblem,
    session: Box<Session>,
}

#[derive(Debug, Clone)]
enum AskProblem {
    NotFound { id: String },
    Unreadable { detail: String },
}

impl AskRejection {
    pub(crate) fn not_found(session: &Session, id: &str) -> AskRejection {
        AskRejection {
            problem: AskProblem::NotFound { id: id.to_owned() },
            session: Box::new(session.clone()),
        }
    }

    pub(crate) fn unreadable(session: &Session, detail: String) -> AskRejection {
        AskRejection {
            problem: AskProblem::Unreadable { detail },
            session: Box::new(session.clone()),
        }
    }

    /// 404 Not Found, or 422 Unprocessable Entity for an ask the inbox
    /// cannot show.
    pub fn status(&self) -> StatusCode {
        match self.problem {
            AskProblem::NotFound { .. } => StatusCode::NOT_FOUND,
            AskProblem::Unreadable { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        }
    }

    /// What was wrong.
    pub fn body_text(&self) -> String {
        match &self.problem {
            AskProblem::NotFound { id } => format!("No ask {id} for you."),
            AskProblem::Unreadable { detail } => {
                format!("Its request is not one the inbox can show: {detail}")
            }
        }
    }
}

impl IntoResponse for AskRejection {
    fn into_response(self) -> Response {
        let title = match self.problem {
            AskProblem::NotFound { .. } => "Not found",
            AskProblem::Unreadable { .. } => "Cannot show this ask",
        };
        let notice = pages::notice(title, Some(&self.session), &self.body_text());
        (self.status(), notice).into_response()
    }
}

/// An answer not applied: refused by the ask's checks (422 — the form
/// again, what the person posted kept and each problem beside its field),
/// or to an ask already settled (409 — its outcome: the first answer
/// stands, a second is never applied).
#[derive(Debug, Clone)]
pub struct AnswerRejection {
    problem: AnswerProblem,
    page: Markup,
}

#[derive(Debug, Clone)]
enum AnswerProblem {
    Invalid {
        fields: Vec<String>,
        problems: usize,
    },
    Settled {
        id: String,
        status: AskStatus,
    },
}

impl AnswerRejection {
    /// Refused with `problems` problems, about `fields` (their ids).
    pub(crate) fn invalid(fields: Vec<String>, problems: usize, page: Markup) -> Self {
        AnswerRejection {
            problem: AnswerProblem::Invalid { fields, problems },
            page,
        }
    }

    /// The ask `id` is already `status`; `page` shows its outcome.
    pub(crate) fn settled(id: &str, status: AskStatus, page: Markup) -> Self {
        AnswerRejection {
            problem: AnswerProblem::Settled {
                id: id.to_owned(),
                status,
            },
            page,
        }
    }

    /// 422 Unprocessable Entity, or 409 Conflict for a settled ask.
    pub fn status(&self) -> StatusCode {
        match self.problem {
            AnswerProblem::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            AnswerProblem::Settled { .. } => StatusCode::CONFLICT,
        }
    }

    /// What was wrong: the fields (by id) an answer was refused for —
    /// never the values given.
    pub fn body_text(&self) -> String {
        match &self.problem {
            AnswerProblem::Invalid { fields, problems } if fields.is_empty() => {
                format!("the answer was refused ({problems} problem(s)); nothing was stored")
            }
            AnswerProblem::Invalid { fields, problems } => format!(
                "the answer was refused ({problems} problem(s), about {}); nothing was stored",
                fields.join(", ")
            ),
            AnswerProblem::Settled { id, status } => format!(
                "ask {id} is already {}; the first answer stands",
                status.as_str()
            ),
        }
    }
}

impl IntoResponse for AnswerRejection {
    fn into_response(self) -> Response {
        (self.status(), self.page).into_response()
    }
}

/// A signed link that does not open its ask: altered, expired or made for
/// another ask (403), for no ask (404), already used (410), for an ask of
/// another person than the one signed in (403, and audited), or no
/// session could be made for it (503 for the store, 500 for randomness).
#[derive(Debug)]
pub struct LinkRejection {
    problem: LinkProblem,
    session: Option<Box<Session>>,
}

#[derive(Debug)]
pub(crate) enum LinkProblem {
    Refused(LinkError),
    NoAsk { id: String },
    Used,
    ForAnother,
    Store(askgate_store::Error),
    NoRandomness,
}

impl LinkRejection {
    pub(crate) fn new(problem: LinkProblem, session: Option<&Session>) -> LinkRejection {
        LinkRejection {
            problem,
            session: session.cloned().map(Box::new),
        }
    }

    /// 403 Forbidden, 404 Not Found, 410 Gone, 503 Service Unavailable or
    /// 500 Internal Server Error.
    pub fn status(&self) -> StatusCode {
        match self.problem {
            LinkProblem::Refused(_) | LinkProblem::ForAnother => StatusCode::FORBIDDEN,
            LinkProblem::NoAsk { .. } => StatusCode::NOT_FOUND,
            LinkProblem::Used => StatusCode::GONE,
            LinkProblem::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
            LinkProblem::NoRandomness => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// What was wrong and what to do instead (never the link's token).
    pub fn body_text(&self) -> String {
        match &self.problem {
            LinkProblem::Refused(error) => error.to_string(),
            LinkProblem::NoAsk { id } => format!("No ask {id}."),
            LinkProblem::Used => "This link was already used: each link opens its ask once. Sign in to the inbox to see the ask.".to_owned(),
            LinkProblem::ForAnother => "This link is for an ask of another person. It was not opened, and the attempt was recorded.".to_owned(),
            LinkProblem::Store(error) => format!("{error}. Nothing was changed; try again."),
            LinkProblem::NoRandomness => "No randomness for a session; the link was used up. Sign in to the inbox to see the ask.".to_owned(),
        }
    }
}

impl IntoResponse for LinkRejection {
    fn into_response(self) -> Response {
        if let LinkProblem::Store(error) = &self.problem {
            tracing::error!(%error, "inbox: the store failed");
        }
        let notice = pages::notice("Link refused", self.session.as_deref(), &self.body_text());
        (self.status(), notice).into_response()
    }
}

/// The store failed (503 Service Unavailable): nothing was changed, and
/// trying again may work. A person's answer that it cut off is kept in
/// the page, to be sent again as it was.
#[derive(Debug)]
pub struct StoreRejection {
    error: askgate_store::Error,
    session: Option<Box<Session>>,
    answer: Option<Box<(String, Posted)>>,
}

impl StoreRejection {
    pub(crate) fn new(session: Option<&Session>, error: askgate_store::Error) -> StoreRejection {
        StoreRejection {
            error,
            session: session.cloned().map(Box::new),
            answer: None,
        }
    }

    /// The refusal of the answer `posted` to the ask `id`: its page keeps
    /// the answer, to be sent again.
    pub(crate) fn of_answer(mut self, id: &str, posted: &Posted) -> StoreRejection {
        self.answer = Some(Box::new((id.to_owned(), posted.clone())));
        self
    }

    /// 503 Service Unavailable.
    pub fn status(&self) -> StatusCode {
        StatusCode::SERVICE_UNAVAILABLE
    }

    /// What failed, and that nothing was changed.
    pub fn body_text(&self) -> String {
        format!("{}. Nothing was changed; try again.", self.error)
    }
}

impl IntoResponse for StoreRejection {
    fn into_response(self) -> Response {
        tracing::error!(error = %self.error, "inbox: the store failed");
        let notice = match &self.answer {
            Some(answer) => pages::answer_kept(
                self.session.as_deref(),
                &self.body_text(),
                &answer.0,
                &answer.1,
            ),
            None => pages::notice(
                "The store failed",
                self.session.as_deref(),
                &self.body_text(),
            ),
        };
        (self.status(), notice).into_response()
    }
}

/// No operator's token as `Authorization: Bearer <token>` (401
/// Unauthorized, with `WWW-Authenticate: Bearer`): the refusal of the
/// [`Operator`](crate::Operator) extractor.
#[derive(Debug, Clone, Copy, Default)]
pub struct OperatorRejection;

impl OperatorRejection {
    /// 401 Unauthorized.
    pub fn status(&self) -> StatusCode {
        StatusCode::UNAUTHORIZED
    }

    /// What is expected.
    pub fn body_text(&self) -> String {
        "an operator's inbox token is needed, sent as `Authorization: Bearer <token>`".to_owned()
    }
}

impl IntoResponse for OperatorRejection {
    fn into_response(self) -> Response {
        (
            self.status(),
            [(header::WWW_AUTHENTICATE, "Bearer")],
            format!("{}\n", self.body_text()),
        )
            .into_response()
    }
}

/// `InboxRejection`, one variant per kind of refusal, with its status,
/// text, response and `From` conversions: the one list of the kinds.
macro_rules! rejections {
    ($($(#[doc = $doc:literal])* $variant:ident($ty:ty),)*) => {
        /// Any refusal of the inbox's routes.
        #[derive(Debug)]
        #[non_exhaustive]
        pub enum InboxRejection {
            $($(#[doc = $doc])* $variant($ty),)*
        }

        impl InboxRejection {
            /// The HTTP status it answers with.
            pub fn status(&self) -> StatusCode {
                match self {
                    $(Self::$variant(r) => r.status(),)*
                }
            }

            /// What was wrong, in a line: never an answer's value or a token.
            pub fn body_text(&self) -> String {
                match self {
                    $(Self::$variant(r) => r.body_text(),)*
                }
            }
        }

        impl IntoResponse for InboxRejection {
            fn into_response(self) -> Response {
                match self {
                    $(Self::$variant(r) => r.into_response(),)*
                }
            }
        }

        $(impl From<$ty> for InboxRejection {
            fn from(rejection: $ty) -> InboxRejection {
                InboxRejection::$variant(rejection)
            }
        })*
    };
}

rejections! {
    /// Not signed in.
    Session(SessionRejection),
    /// A post not from the inbox's own form.
    Post(PostRejection),
    /// A sign-in refused.
    SignIn(SignInRejection),
    /// An ask this session cannot see.
    Ask(AskRejection),
    /// An answer not applied.
    Answer(AnswerRejection),
    /// A signed link that does not open its ask.
    Link(LinkRejection),
    /// The store failed.
    Store(StoreRejection),
}
