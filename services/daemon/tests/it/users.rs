//! Users for the access tests: made through the store (as a sign-in makes them), each
//! calling the API with a personal API token it made through the API.

use domain::identity::Role;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use std::sync::atomic::{AtomicU64, Ordering};

use crate::helpers::{expect_json, TestApp, POSITION};

/// A user and their personal API token. Like a client reading its own writes, its `GET`s
/// carry the position of the last command it was answered (the read models wait for it).
pub struct Caller {
    pub id: String,
    pub token: String,
    address: String,
    client: reqwest::Client,
    position: AtomicU64,
}

impl TestApp {
    /// A new active user with `role`, signed in once.
    pub async fn user(&self, email: &str, role: Role) -> Caller {
        self.user_in(email, role, &[]).await
    }

    /// A new active user with `role` in `groups` (the groups claim of their sign-in).
    pub async fn user_in(&self, email: &str, role: Role, groups: &[&str]) -> Caller {
        let sign_in = store::users::SignIn {
            issuer: "https://issuer.test".into(),
            subject: format!("sub-{email}"),
            email: email.into(),
            email_verified: true,
            name: None,
            groups: groups.iter().map(|g| g.to_string()).collect(),
        };
        let user = store::users::upsert_signed_in(&self.pool, &sign_in, &[])
            .await
            .unwrap();
        if role != Role::User {
            store::users::set_role(&self.pool, user.id, role)
                .await
                .unwrap();
        }
        // A first token straight into the store (sign-in would give a session instead);
        // the caller's own token is then made through the API with it.
        let first = api::auth::tokens::generate();
        store::api_tokens::insert(
            &self.pool,
            user.id,
            "first",
            &first[..12],
            &api::auth::tokens::hash(&first),
            None,
        )
        .await
        .unwrap();
        let mut caller = Caller {
            id: user.id.to_string(),
            token: first,
            address: self.address.clone(),
            client: self.client.clone(),
            position: AtomicU64::new(0),
        };
        let made: Value = caller
            .json(
                "POST",
                "/api/v1/tokens",
                Some(&json!({"name": "tests"})),
                201,
            )
            .await;
        caller.token = made["token"].as_str().unwrap().to_owned();
        caller
    }

    /// A caller with `token` (any string), for refused credentials.
    pub fn with_token(&self, token: &str) -> Caller {
        Caller {
            id: String::new(),
            token: token.into(),
            address: self.address.clone(),
            client: self.client.clone(),
            position: AtomicU64::new(0),
        }
    }
}

impl Caller {
    /// A request with the caller's token; no credential at all when the token is empty.
    pub fn request(&self, method: &str, path: &str) -> reqwest::RequestBuilder {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let request = self
            .client
            .request(method, format!("{}{path}", self.address));
        match self.token.is_empty() {
            true => request,
            false => request.bearer_auth(&self.token),
        }
    }

    /// The response to `method path` with the JSON `body`, if any.
    pub async fn send(&self, method: &str, path: &str, body: Option<&Value>) -> reqwest::Response {
        let mut request = self.request(method, path);
        if let Some(body) = body {
            request = request.json(body);
        }
        match self.position.load(Ordering::SeqCst) {
            position if position > 0 && method == "GET" => {
                request = request.header(POSITION, position.to_string());
            }
            _ => {}
        }
        let response = request.send().await.unwrap();
        let answered = response
            .headers()
            .get(POSITION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if let Some(position) = answered {
            self.position.fetch_max(position, Ordering::SeqCst);
        }
        response
    }

    /// The JSON body of `method path`, which must answer `status`.
    pub async fn json<T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        status: u16,
    ) -> T {
        expect_json(self.send(method, path, body).await, status).await
    }

    /// The status of `method path`.
    pub async fn status(&self, method: &str, path: &str, body: Option<&Value>) -> u16 {
        self.send(method, path, body).await.status().as_u16()
    }
}
