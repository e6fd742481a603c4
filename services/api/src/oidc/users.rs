//! The users of sign-ins and bearer JWTs: recorded from their claims, read from Postgres.

use domain::identity::UserId;
use store::users::{SignIn, SignInError, UserStatus};

use super::{jwt, Oidc, Profile};
use crate::error::store_failed;
use crate::routes::auth::StatusUser;
use crate::{ApiError, AppState};

/// Records a sign-in (creating the user at the first); refuses a profile without an email
/// and a disabled user.
pub(crate) async fn sign_in(
    state: &AppState,
    oidc: &Oidc,
    profile: Profile,
) -> Result<UserId, ApiError> {
    let email = profile.email.ok_or_else(|| {
        ApiError::Forbidden(
            "the OpenID provider gave no email for this account; sign-in needs one".into(),
        )
    })?;
    let sign_in = SignIn {
        issuer: oidc.issuer.clone(),
        subject: profile.subject,
        email,
        email_verified: profile.email_verified,
        name: profile.name,
        groups: profile.groups,
    };
    let user = store::users::upsert_signed_in(&state.app.pool, &sign_in, &state.bootstrap_admins)
        .await
        .map_err(sign_in_failed)?;
    if user.status != UserStatus::Active {
        return Err(ApiError::Forbidden("this account is disabled".into()));
    }
    tracing::info!(user = %user.id, "signed in");
    Ok(user.id)
}

/// A sign-in that cannot be recorded: a clear 409 when its email is another user's.
fn sign_in_failed(e: SignInError) -> ApiError {
    match e {
        SignInError::EmailTaken => ApiError::Conflict(
            "email: another user of this platform already has this account's email (as \
             verified by the OpenID provider); an administrator must resolve it"
                .into(),
        ),
        SignInError::Store(e) => store_failed(e),
    }
}

/// The user `id` as `/auth/status` shows it, if active.
pub(crate) async fn active_user(
    state: &AppState,
    id: UserId,
) -> Result<Option<StatusUser>, ApiError> {
    let user = store::users::get(&state.app.pool, id)
        .await
        .map_err(store_failed)?;
    Ok(user
        .filter(|u| u.status == UserStatus::Active)
        .map(|u| StatusUser {
            id: u.id.as_uuid(),
            email: u.email,
            name: u.name,
            role: u.role.as_str().to_owned(),
            groups: u.groups,
        }))
}

/// The user of a bearer JWT of the provider: the one who signed in as its subject, else one
/// made from the token's claims if it has an email; `None` for a bearer token that is not a
/// JWT or when JWTs are not accepted here.
pub async fn user_of_jwt(state: &AppState, token: &str) -> Result<Option<UserId>, ApiError> {
    let Some(oidc) = state.oidc.as_deref() else {
        return Ok(None);
    };
    let Some(verifier) = oidc.jwt.as_ref() else {
        return Ok(None);
    };
    if token.split('.').count() != 3 {
        return Ok(None);
    }
    let verified = match verifier.verify(token).await {
        Ok(verified) => verified,
        Err(jwt::JwtError::Keys) => {
            return Err(ApiError::Unavailable(
                "the OpenID provider's keys cannot be fetched to check the token; retry".into(),
            ))
        }
        Err(e) => return Err(ApiError::BadCredential(e.to_string())),
    };
    let known =
        store::sessions::user_by_subject(&state.app.pool, &oidc.issuer, &verified.subject).await?;
    if let Some(id) = known {
        return Ok(Some(UserId::new(id)));
    }
    let Some(email) = verified.email else {
        return Err(ApiError::BadCredential(
            "the bearer JWT's subject has never signed in and the token has no email to make \
             a user from: sign in once in the browser"
                .into(),
        ));
    };
    let claims = &verified.claims;
    let sign_in = SignIn {
        issuer: oidc.issuer.clone(),
        subject: verified.subject.clone(),
        email,
        email_verified: verified.email_verified,
        name: claims
            .get("name")
            .and_then(|v| v.as_str())
            .map(str::to_owned),
        groups: super::claims::groups(claims, &oidc.groups_claim),
    };
    let user = store::users::upsert_signed_in(&state.app.pool, &sign_in, &state.bootstrap_admins)
        .await
        .map_err(sign_in_failed)?;
    Ok(Some(user.id))
}
