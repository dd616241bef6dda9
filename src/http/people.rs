//! People over HTTP (issue 28 item 5): the list, a person with their photos (paged by asset
//! id), who is in a photo, and the user's word (name, hide, merge, move a face, "not this
//! person"), each through the same operation as `mediadex people ...` (`ops::people`), and a
//! recluster on request. Holds no SQL and no grouping rule.

use super::assets::{PageQuery, asset_out, bad_cursor};
use super::error::ApiError;
use super::{AppState, blocking};
use crate::wire::{Asset as AssetOut, FacePerson, Person};
use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;

/// Photos of a person per page, by default and at most.
const DEFAULT_PAGE: i64 = 100;
const MAX_PAGE: i64 = 500;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    #[serde(default)]
    hidden: bool,
}

/// `GET /api/people?hidden=`: the people, named first.
pub async fn list(
    State(s): State<AppState>,
    q: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Vec<Person>>, ApiError> {
    let Query(q) = q?;
    let people = blocking(move || Ok(crate::ops::people::list(&s.ops, q.hidden)?)).await?;
    Ok(Json(people.iter().map(Person::new).collect()))
}

#[derive(serde::Serialize)]
pub struct PersonPage {
    #[serde(flatten)]
    person: Person,
    /// Their live photos after the cursor, by asset id, as `/api/assets/{id}` gives them.
    items: Vec<AssetOut>,
    next_cursor: Option<String>,
}

/// `GET /api/people/{id}?limit=&cursor=`: a person and a page of their photos.
pub async fn one(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    q: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Json<PersonPage>, ApiError> {
    let (Path(id), Query(q)) = (id?, q?);
    let limit = super::error::limit(q.limit, DEFAULT_PAGE, MAX_PAGE)?;
    let after = (q.cursor.as_deref())
        .map(|text| text.parse::<i64>().map_err(|_| bad_cursor()))
        .transpose()?
        .unwrap_or(0);
    blocking(move || {
        let person = crate::ops::people::person(&s.ops, id)?;
        let mut ids = crate::ops::people::photos(&s.ops, id, after, limit + 1)?;
        let more = ids.len() as i64 > limit;
        ids.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        let mut items = Vec::with_capacity(ids.len());
        for asset in &ids {
            // Swept between the two reads: left out, as a later page would.
            if let Some(a) = s.ops.store.asset(*asset)? {
                items.push(asset_out(a));
            }
        }
        Ok(Json(PersonPage {
            person: Person::new(&person),
            items,
            next_cursor: more.then(|| ids.last().map(i64::to_string)).flatten(),
        }))
    })
    .await
}

/// `GET /api/assets/{id}/people`: each face of a photo with who it is.
pub async fn of_asset(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<Vec<FacePerson>>, ApiError> {
    let Path(id) = id?;
    let faces = blocking(move || Ok(crate::ops::people::in_photo(&s.ops, id)?)).await?;
    Ok(Json(faces.iter().map(FacePerson::new).collect()))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NameBody {
    name: Option<String>,
}

/// `POST /api/people/{id}/name` `{"name"}`: names them (null or "" unnames them).
pub async fn name(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    body: Result<Json<NameBody>, JsonRejection>,
) -> Result<Json<Person>, ApiError> {
    let (Path(id), Json(body)) = (id?, body?);
    let name = body.name.unwrap_or_default();
    let p = blocking(move || Ok(crate::ops::people::name(&s.ops, id, &name)?)).await?;
    Ok(Json(Person::new(&p)))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HideBody {
    hidden: bool,
}

/// `POST /api/people/{id}/hide` `{"hidden"}`: hides them, or shows them again.
pub async fn hide(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    body: Result<Json<HideBody>, JsonRejection>,
) -> Result<Json<Person>, ApiError> {
    let (Path(id), Json(body)) = (id?, body?);
    let p = blocking(move || Ok(crate::ops::people::hide(&s.ops, id, body.hidden)?)).await?;
    Ok(Json(Person::new(&p)))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MergeBody {
    from: i64,
}

/// `POST /api/people/{id}/merge` `{"from"}`: every face of `from` is this person's now.
pub async fn merge(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    body: Result<Json<MergeBody>, JsonRejection>,
) -> Result<Json<Person>, ApiError> {
    let (Path(id), Json(body)) = (id?, body?);
    let p = blocking(move || Ok(crate::ops::people::merge(&s.ops, id, body.from)?)).await?;
    Ok(Json(Person::new(&p)))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonBody {
    person: Option<i64>,
}

/// `POST /api/faces/{id}/person` `{"person"}`: the face is that person (null: a new one).
pub async fn move_face(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    body: Result<Json<PersonBody>, JsonRejection>,
) -> Result<Json<Person>, ApiError> {
    let (Path(id), Json(body)) = (id?, body?);
    let p = blocking(move || Ok(crate::ops::people::move_face(&s.ops, id, body.person)?)).await?;
    Ok(Json(Person::new(&p)))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotBody {
    person: i64,
}

/// `POST /api/faces/{id}/not` `{"person"}`: the face is not that person (204).
pub async fn not_person(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    body: Result<Json<NotBody>, JsonRejection>,
) -> Result<StatusCode, ApiError> {
    let (Path(id), Json(body)) = (id?, body?);
    blocking(move || Ok(crate::ops::people::reject(&s.ops, id, body.person)?)).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(serde::Serialize)]
pub struct Queued {
    /// False when a recluster was waiting or running already (it takes this request's place).
    queued: bool,
}

/// `POST /api/people/recluster`: queues the "recluster all" job (202).
pub async fn recluster(State(s): State<AppState>) -> Result<(StatusCode, Json<Queued>), ApiError> {
    let queued = blocking(move || Ok(crate::ops::people::recluster(&s.ops)?)).await?;
    Ok((StatusCode::ACCEPTED, Json(Queued { queued })))
}
