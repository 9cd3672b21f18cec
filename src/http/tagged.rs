//! Answers for views with a strong `ETag` (CONTRACT.md "Consistency and caching"): `200` with
//! the view and `Cache-Control: no-cache`, or `304 Not Modified` without a body when the
//! client's `If-None-Match` names the current tag.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::derived::rendered::Rendered;

const NO_CACHE: HeaderValue = HeaderValue::from_static("no-cache");
const JSON: HeaderValue = HeaderValue::from_static("application/json");

pub fn respond(request: &HeaderMap, view: &Rendered) -> Response {
    let etag = HeaderValue::from_str(&view.etag).ok();
    let unchanged = request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| view.matches(v));
    let mut res = if unchanged {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut res = Response::new(Body::from(view.json.clone()));
        res.headers_mut().insert(header::CONTENT_TYPE, JSON);
        res
    };
    let headers = res.headers_mut();
    headers.insert(header::CACHE_CONTROL, NO_CACHE);
    if let Some(etag) = etag {
        headers.insert(header::ETAG, etag);
    }
    res
}
