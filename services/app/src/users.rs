//! Users, for admins: every user, and changing one's role or status. Disabling a user
//! refuses their every credential from the next request on. Only a super admin grants or
//! takes away super admin; no one changes their own role or status.

use domain::identity::{Role, UserId};
use store::users::{User, UserRecord, UserStatus};

use crate::{App, Caller, Error};

/// What to change of a user; `None` leaves it.
#[derive(Debug, Clone, Default)]
pub struct UserChanges {
    pub role: Option<Role>,
    pub status: Option<UserStatus>,
}

/// Refused unless the caller is an admin.
pub(crate) fn admin_only(caller: &Caller) -> Result<(), Error> {
    match caller.principal.is_admin() {
        true => Ok(()),
        false => Err(Error::forbidden("only admins may use this route")),
    }
}

impl App {
    /// Every user, oldest first (admins only).
    pub async fn users(&self, caller: &Caller) -> Result<Vec<UserRecord>, Error> {
        admin_only(caller)?;
        Ok(store::users::list(&self.pool).await?)
    }

    /// Changes user `id`'s role or status (admins only).
    #[tracing::instrument(skip_all, fields(user = %id, by = %caller.principal.user))]
    pub async fn change_user(
        &self,
        caller: &Caller,
        id: UserId,
        changes: UserChanges,
    ) -> Result<User, Error> {
        admin_only(caller)?;
        let not_found = || Error::NotFound(format!("no user {:?}", id.to_string()));
        let UserChanges { role, status } = changes;
        let pool = &self.pool;
        let user = store::users::get(pool, id).await?.ok_or_else(not_found)?;
        let principal = &caller.principal;
        if id == principal.user && (role.is_some() || status.is_some()) {
            return Err(Error::invalid(
                "body",
                "no one changes their own role or status",
            ));
        }
        let super_needed = role == Some(Role::SuperAdmin) || user.role == Role::SuperAdmin;
        if super_needed && principal.role != Role::SuperAdmin {
            return Err(Error::forbidden(
                "only a super admin grants super admin or changes a super admin",
            ));
        }
        let mut user = user;
        if let Some(role) = role {
            user = store::users::set_role(pool, id, role)
                .await?
                .ok_or_else(not_found)?;
        }
        if let Some(status) = status {
            user = store::users::set_status(pool, id, status)
                .await?
                .ok_or_else(not_found)?;
        }
        tracing::info!(role = %user.role, status = user.status.as_str(), "user changed");
        Ok(user)
    }
}
