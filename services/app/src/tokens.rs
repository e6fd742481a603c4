//! Personal API tokens: `pat_` and 64 hex digits (256 random bits), of which only the
//! SHA-256 is stored. A user makes, lists and revokes their own; an admin lists and revokes
//! anyone's (a token leaked, a script retired) without disabling the user.

use domain::identity::UserId;
use domain::provisioning::SshKeyName;
use sha2::{Digest, Sha256};
use store::api_tokens::Minted;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{App, Caller, Error, Principal};

/// What every personal API token starts with.
pub const PREFIX: &str = "pat_";

/// How many characters of a token its lists show (`pat_` and 8 hex digits).
pub const SHOWN: usize = PREFIX.len() + 8;

/// A new token's secret.
pub fn generate() -> String {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).expect("the OS's random source works");
    format!("{PREFIX}{}", hex::encode(bytes))
}

/// What is stored of a token.
pub fn hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// A token, as the store keeps it (no secret).
pub type Token = store::api_tokens::ApiTokenRow;

/// A token to make.
pub struct NewToken<'a> {
    /// The same rule as an SSH key's name: 1 to 64 characters on one line.
    pub name: SshKeyName,
    /// When it stops working, if asked; in the future.
    pub expires_at: Option<OffsetDateTime>,
    /// What made it: the token (and the admin token) of the caller's credential, recorded
    /// so that it cannot outlive or outrank them.
    pub minted: Minted<'a>,
    /// When the caller's credential stops working by itself: the new token expires no
    /// later.
    pub credential_expires_at: Option<OffsetDateTime>,
}

/// A token just made: its secret, for the caller only (never stored nor logged).
pub struct CreatedToken {
    pub secret: String,
    pub token: Token,
}

impl std::fmt::Debug for CreatedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreatedToken")
            .field("token", &self.token.id)
            .finish_non_exhaustive()
    }
}

impl App {
    /// Makes a personal API token for the caller.
    #[tracing::instrument(skip_all, fields(user = %caller.principal.user))]
    pub async fn create_token(
        &self,
        caller: &Caller,
        new: NewToken<'_>,
    ) -> Result<CreatedToken, Error> {
        if new
            .expires_at
            .is_some_and(|at| at <= OffsetDateTime::now_utc())
        {
            return Err(Error::invalid("expires_at", "must be in the future"));
        }
        // No later than the credential that makes it, when that one expires.
        let expires_at = match (new.expires_at, new.credential_expires_at) {
            (Some(asked), Some(limit)) => Some(asked.min(limit)),
            (asked, limit) => asked.or(limit),
        };
        let secret = generate();
        let token = store::api_tokens::insert_minted(
            &self.pool,
            caller.principal.user,
            new.name.as_str(),
            &secret[..SHOWN],
            &hash(&secret),
            expires_at,
            &new.minted,
        )
        .await?;
        tracing::info!(token = %token.id, "personal API token made");
        Ok(CreatedToken { secret, token })
    }

    /// The caller's tokens (not revoked; expired ones included), oldest first.
    pub async fn tokens(&self, principal: &Principal) -> Result<Vec<Token>, Error> {
        Ok(store::api_tokens::list(&self.pool, principal.user).await?)
    }

    /// Revokes one of the caller's tokens: it is refused from now on.
    #[tracing::instrument(skip_all, fields(user = %caller.principal.user, token = %id))]
    pub async fn revoke_token(&self, caller: &Caller, id: Uuid) -> Result<(), Error> {
        if !store::api_tokens::revoke(&self.pool, caller.principal.user, id).await? {
            return Err(Error::NotFound(format!("no token {id}")));
        }
        tracing::info!("personal API token revoked");
        Ok(())
    }

    /// A user's tokens (admins only), oldest first, without secrets.
    #[tracing::instrument(skip_all, fields(user = %user))]
    pub async fn user_tokens(&self, caller: &Caller, user: UserId) -> Result<Vec<Token>, Error> {
        self.known_user(caller, user).await?;
        Ok(store::api_tokens::list(&self.pool, user).await?)
    }

    /// Revokes a user's token (admins only).
    #[tracing::instrument(skip_all, fields(admin = %caller.principal.user, user = %user, token = %token))]
    pub async fn revoke_user_token(
        &self,
        caller: &Caller,
        user: UserId,
        token: Uuid,
    ) -> Result<(), Error> {
        self.known_user(caller, user).await?;
        if !store::api_tokens::revoke(&self.pool, user, token).await? {
            return Err(Error::NotFound(format!("user {user} has no token {token}")));
        }
        tracing::info!("personal API token revoked by an admin");
        Ok(())
    }

    /// Ok for an admin naming an existing user.
    async fn known_user(&self, caller: &Caller, user: UserId) -> Result<(), Error> {
        crate::users::admin_only(caller)?;
        store::users::get(&self.pool, user)
            .await?
            .ok_or_else(|| Error::NotFound(format!("no user {user}")))?;
        Ok(())
    }
}
