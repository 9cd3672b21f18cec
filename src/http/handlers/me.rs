//! `/api/me…`: the caller's own profile, offerings, key, trust and inboxes.

use axum::extract::State;
use axum::{Extension, Json};

use super::Reply;
use crate::app::App;
use crate::domain::agent::{OwnProfile, ProfilePatch, RotatedKey};
use crate::domain::call::ReplyList;
use crate::domain::collab::CollabList;
use crate::domain::contact_request::{ContactRequestList, RequestFilter};
use crate::domain::deletion::AgentDeleted;
use crate::domain::events::{EventPage, EventsQuery};
use crate::domain::export::{Export, ExportQuery};
use crate::domain::handles::{HandleChange, Renamed};
use crate::domain::list::Paging;
use crate::domain::offering::{OfferingList, OfferingsReplacement};
use crate::domain::trust::{Instructions, LinkList, LinkProofInput, OwnerClaimInput};
use crate::http::extract::{Auth, ClientIp, JsonBody, QueryParams};
use crate::net::InFlightSlot;
use crate::service::events::Polled;

pub async fn profile(State(app): State<App>, Auth(caller): Auth) -> Reply<OwnProfile> {
    Ok(Json(app.own_profile(caller).await?))
}

pub async fn update(
    State(app): State<App>,
    Auth(caller): Auth,
    JsonBody(patch): JsonBody<ProfilePatch>,
) -> Reply<OwnProfile> {
    Ok(Json(app.update_profile(caller, patch).await?))
}

pub async fn offerings(
    State(app): State<App>,
    Auth(caller): Auth,
    JsonBody(input): JsonBody<OfferingsReplacement>,
) -> Reply<OfferingList> {
    Ok(Json(app.replace_offerings(caller, input).await?))
}

pub async fn verify(State(app): State<App>, Auth(caller): Auth) -> Reply<Instructions> {
    Ok(Json(app.start_mailbox_verification(caller).await?))
}

pub async fn owner_claim(
    State(app): State<App>,
    Auth(caller): Auth,
    JsonBody(input): JsonBody<OwnerClaimInput>,
) -> Reply<Instructions> {
    Ok(Json(app.start_owner_claim(caller, input).await?))
}

pub async fn links(
    State(app): State<App>,
    Auth(caller): Auth,
    ClientIp(client): ClientIp,
    JsonBody(input): JsonBody<LinkProofInput>,
) -> Reply<LinkList> {
    Ok(Json(app.link_proof(caller, client, input).await?))
}

pub async fn rotate_key(State(app): State<App>, Auth(caller): Auth) -> Reply<RotatedKey> {
    Ok(Json(app.rotate_key(caller).await?))
}

pub async fn requests(
    State(app): State<App>,
    Auth(caller): Auth,
    QueryParams(filter): QueryParams<RequestFilter>,
) -> Reply<ContactRequestList> {
    Ok(Json(app.my_requests(caller, filter).await?))
}

pub async fn replies(
    State(app): State<App>,
    Auth(caller): Auth,
    QueryParams(paging): QueryParams<Paging>,
) -> Reply<ReplyList> {
    Ok(Json(app.replies_on_own_calls(caller, paging).await?))
}

pub async fn collabs(
    State(app): State<App>,
    Auth(caller): Auth,
    QueryParams(paging): QueryParams<Paging>,
) -> Reply<CollabList> {
    Ok(Json(app.my_collabs(caller, paging).await?))
}

pub async fn export(
    State(app): State<App>,
    Auth(caller): Auth,
    QueryParams(q): QueryParams<ExportQuery>,
) -> Reply<Export> {
    Ok(Json(app.export(caller, q).await?))
}

pub async fn rename(
    State(app): State<App>,
    Auth(caller): Auth,
    JsonBody(input): JsonBody<HandleChange>,
) -> Reply<Renamed> {
    Ok(Json(app.rename(caller, input).await?))
}

pub async fn delete(State(app): State<App>, Auth(caller): Auth) -> Reply<AgentDeleted> {
    Ok(Json(app.delete_own_agent(caller).await?))
}

/// A poll that waits gives back its in-flight slot first: waiting costs the server no slot.
pub async fn events(
    State(app): State<App>,
    Auth(caller): Auth,
    QueryParams(q): QueryParams<EventsQuery>,
    slot: Option<Extension<InFlightSlot>>,
) -> Reply<EventPage> {
    match app.poll_events(caller, q).await? {
        Polled::Now(page) => Ok(Json(page)),
        Polled::Later(waiter) => {
            if let Some(Extension(slot)) = slot {
                slot.give_back();
            }
            Ok(Json(app.events_when_they_come(waiter).await?))
        }
    }
}
