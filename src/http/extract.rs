//! Extractors that turn a request into validated core inputs. Their failures are core errors,
//! so malformed JSON, a wrong content type, an oversized body or a bad key all answer with the
//! envelope.

use axum::body::Bytes;
use axum::extract::{FromRef, FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::app::App;
use crate::error::Error;
use crate::net::request_client_ip;
use crate::service::Caller;
use crate::validation;

/// A JSON body validated against `T`'s schema.
pub struct JsonBody<T>(pub T);

/// A JSON body that may be left out entirely (`T::default()` then). A body that is sent must
/// be JSON: blank space is not.
pub struct OptionalJsonBody<T>(pub T);

fn is_json(headers: &HeaderMap) -> bool {
    let Some(ct) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = ct.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

async fn read_body(req: Request) -> Result<(HeaderMap, Bytes), Error> {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, crate::domain::schema::MAX_BODY_BYTES)
        .await
        .map_err(|_| Error::PayloadTooLarge)?;
    Ok((parts.headers, bytes))
}

fn parse<T: DeserializeOwned + JsonSchema + 'static>(headers: &HeaderMap, bytes: &[u8]) -> Result<T, Error> {
    if !is_json(headers) {
        return Err(Error::UnsupportedMediaType);
    }
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|_| Error::InvalidJson)?;
    validation::from_json(value)
}

impl<S, T> FromRequest<S> for JsonBody<T>
where
    S: Send + Sync,
    T: DeserializeOwned + JsonSchema + 'static,
{
    type Rejection = Error;

    async fn from_request(req: Request, _: &S) -> Result<Self, Self::Rejection> {
        let declared_json = is_json(req.headers());
        let (headers, bytes) = read_body(req).await?;
        if bytes.is_empty() && declared_json {
            return Err(Error::InvalidJson);
        }
        parse(&headers, &bytes).map(JsonBody)
    }
}

impl<S, T> FromRequest<S> for OptionalJsonBody<T>
where
    S: Send + Sync,
    T: DeserializeOwned + JsonSchema + Default + 'static,
{
    type Rejection = Error;

    async fn from_request(req: Request, _: &S) -> Result<Self, Self::Rejection> {
        let (headers, bytes) = read_body(req).await?;
        if bytes.is_empty() {
            return Ok(OptionalJsonBody(T::default()));
        }
        parse(&headers, &bytes).map(OptionalJsonBody)
    }
}

/// Query parameters validated against `T`'s schema.
pub struct QueryParams<T>(pub T);

impl<S, T> FromRequestParts<S> for QueryParams<T>
where
    S: Send + Sync,
    T: DeserializeOwned + JsonSchema + 'static,
{
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or("");
        let pairs = url::form_urlencoded::parse(query.as_bytes()).into_owned().collect();
        validation::from_query(pairs).map(QueryParams)
    }
}

/// A path segment (`{handle}`, `{id}`). Anything undecodable simply names nothing: 404.
pub struct PathParam(pub String);

impl<S: Send + Sync> FromRequestParts<S> for PathParam {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<String>::from_request_parts(parts, state)
            .await
            .map(|p| PathParam(p.0))
            .map_err(|_| Error::NotFound)
    }
}

/// The authenticated caller. Missing, malformed, unknown or rotated keys answer 401; a
/// suspended agent's key answers 403; too many uncached key checks from one client answer 429.
pub struct Auth(pub Caller);

impl<S> FromRequestParts<S> for Auth
where
    S: Send + Sync,
    App: FromRef<S>,
{
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let header = parts.headers.get(header::AUTHORIZATION).ok_or(Error::Unauthorized)?;
        let value = header.to_str().map_err(|_| Error::Unauthorized)?.trim();
        let (scheme, key) = value.split_once(' ').ok_or(Error::Unauthorized)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(Error::Unauthorized);
        }
        let key = key.trim().to_owned();
        let app = App::from_ref(state);
        let ip = request_client_ip(parts, &app).to_string();
        app.authenticate(key, ip).await.map(Auth)
    }
}

/// The sender's address, for an unkeyed write counted against it (a report of a call, a key
/// recovery started). A web page of another site can make its visitors' browsers send such a
/// request without asking (a form, a no-cors fetch): each would count against the visitor, so
/// the page could spend the budgets of every address it reaches. Such a request is refused, as
/// is a body declared as anything but JSON (what a form sends), even an empty one.
pub struct SenderIp(pub std::net::IpAddr);

impl<S> FromRequestParts<S> for SenderIp
where
    S: Send + Sync,
    App: FromRef<S>,
{
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let fetch_site = parts.headers.get("sec-fetch-site").map(HeaderValue::as_bytes);
        if fetch_site.is_some_and(|site| site.eq_ignore_ascii_case(b"cross-site")) {
            return Err(Error::FromAnotherSite);
        }
        if parts.headers.contains_key(header::CONTENT_TYPE) && !is_json(&parts.headers) {
            return Err(Error::UnsupportedMediaType);
        }
        ClientIp::from_request_parts(parts, state).await.map(|ClientIp(ip)| SenderIp(ip))
    }
}

/// The client's address: the socket peer, or, when the peer is a trusted proxy, the right-most
/// `X-Forwarded-For` entry that is not a trusted proxy.
pub struct ClientIp(pub std::net::IpAddr);

impl<S> FromRequestParts<S> for ClientIp
where
    S: Send + Sync,
    App: FromRef<S>,
{
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let app = App::from_ref(state);
        Ok(ClientIp(request_client_ip(parts, &app)))
    }
}
