//! The Kubernetes executor's settings (`PROVISIONING_K8S_*`), apart from the rest of the
//! configuration because there are many of them.

use super::ConfigError;

/// The Kubernetes executor's settings (`PROVISIONING_EXECUTOR=kubernetes`), or `None` for
/// the local executor.
pub(super) fn kubernetes(
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<dispatcher::KubernetesConfig>, ConfigError> {
    match var("PROVISIONING_EXECUTOR").as_deref() {
        None | Some("local") => return Ok(None),
        Some("kubernetes") => {}
        Some(_) => {
            return Err(ConfigError {
                name: "PROVISIONING_EXECUTOR",
                reason: "must be local or kubernetes".into(),
            })
        }
    }
    let image = var("PROVISIONING_K8S_RUNNER_IMAGE").ok_or(ConfigError {
        name: "PROVISIONING_K8S_RUNNER_IMAGE",
        reason: "must be set when PROVISIONING_EXECUTOR=kubernetes".into(),
    })?;
    let mut k8s = dispatcher::KubernetesConfig::new(image);
    if let Some(namespace) = var("PROVISIONING_K8S_NAMESPACE") {
        if namespace.len() > 63
            || !namespace
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(ConfigError {
                name: "PROVISIONING_K8S_NAMESPACE",
                reason: "must be a namespace name: lowercase letters, digits and '-'".into(),
            });
        }
        k8s.namespace = namespace;
    }
    let seconds = |name: &'static str| -> Result<Option<u32>, ConfigError> {
        var(name)
            .map(|v| {
                v.parse::<u32>()
                    .ok()
                    .filter(|&n| n > 0 && n <= i32::MAX as u32)
                    .ok_or(ConfigError {
                        name,
                        reason: "must be a positive number of seconds".into(),
                    })
            })
            .transpose()
    };
    if let Some(ttl) = seconds("PROVISIONING_K8S_JOB_TTL_SECS")? {
        k8s.job_ttl_secs = ttl as i32;
    }
    if var("PROVISIONING_K8S_JOB_DEADLINE_SECS").is_some() {
        return Err(ConfigError {
            name: "PROVISIONING_K8S_JOB_DEADLINE_SECS",
            reason: "is no longer read: a Job's activeDeadlineSeconds is its action's deadline \
                     (PROVISIONING_DEADLINE_CREATE, _DESTROY, _REFRESH) plus \
                     PROVISIONING_CANCEL_COOLOFF; unset it"
                .into(),
        });
    }
    if let Some(every) = seconds("PROVISIONING_K8S_RECONCILE_SECS")? {
        k8s.reconcile_every = std::time::Duration::from_secs(u64::from(every));
    }
    let secret = |name: &'static str| var(name).map(|value| secret_ref(name, &value)).transpose();
    k8s.backend_secret = secret("PROVISIONING_K8S_BACKEND_SECRET")?;
    if let Some(url) = var("PROVISIONING_K8S_RUNNER_NATS_URL") {
        bus::check_server_urls(&url).map_err(|reason| ConfigError {
            name: "PROVISIONING_K8S_RUNNER_NATS_URL",
            reason,
        })?;
        k8s.runner_nats_url = Some(url);
    }
    k8s.runner_nats_auth = match (
        var("PROVISIONING_K8S_RUNNER_NATS_USER"),
        secret("PROVISIONING_K8S_RUNNER_NATS_SECRET")?,
        secret("PROVISIONING_K8S_RUNNER_NATS_CREDS_SECRET")?,
    ) {
        (None, None, None) => None,
        (Some(user), Some(password), None) => {
            Some(dispatcher::RunnerNatsAuth::Password { user, password })
        }
        (None, None, Some(file)) => Some(dispatcher::RunnerNatsAuth::CredentialsFile(file)),
        (_, _, Some(_)) => {
            return Err(ConfigError {
                name: "PROVISIONING_K8S_RUNNER_NATS_CREDS_SECRET",
                reason: "must not be set with PROVISIONING_K8S_RUNNER_NATS_USER or _SECRET".into(),
            })
        }
        (None, Some(_), None) => {
            return Err(ConfigError {
                name: "PROVISIONING_K8S_RUNNER_NATS_USER",
                reason: "must be set with PROVISIONING_K8S_RUNNER_NATS_SECRET".into(),
            })
        }
        (Some(_), None, None) => {
            return Err(ConfigError {
                name: "PROVISIONING_K8S_RUNNER_NATS_SECRET",
                reason: "must be set with PROVISIONING_K8S_RUNNER_NATS_USER".into(),
            })
        }
    };
    let resources = &mut k8s.resources;
    for (name, field) in [
        (
            "PROVISIONING_K8S_RUNNER_CPU_REQUEST",
            &mut resources.cpu_request,
        ),
        (
            "PROVISIONING_K8S_RUNNER_CPU_LIMIT",
            &mut resources.cpu_limit,
        ),
        (
            "PROVISIONING_K8S_RUNNER_MEMORY_REQUEST",
            &mut resources.memory_request,
        ),
        (
            "PROVISIONING_K8S_RUNNER_MEMORY_LIMIT",
            &mut resources.memory_limit,
        ),
    ] {
        if let Some(quantity) = var(name) {
            *field = quantity;
        }
    }
    Ok(Some(k8s))
}

/// A `<secret name>/<key>` setting.
fn secret_ref(name: &'static str, value: &str) -> Result<registry::SecretRef, ConfigError> {
    match value.split_once('/') {
        Some((secret, key)) if !secret.is_empty() && !key.is_empty() && !key.contains('/') => {
            Ok(registry::SecretRef {
                name: secret.into(),
                key: key.into(),
            })
        }
        _ => Err(ConfigError {
            name,
            reason: "must be <secret name>/<key>".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubernetes_from(
        vars: &[(&str, &str)],
    ) -> Result<Option<dispatcher::KubernetesConfig>, ConfigError> {
        let vars: std::collections::HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        kubernetes(&|name| vars.get(name).cloned())
    }

    #[test]
    fn the_local_executor_is_the_default() {
        assert!(kubernetes_from(&[]).unwrap().is_none());
        assert!(kubernetes_from(&[("PROVISIONING_EXECUTOR", "local")])
            .unwrap()
            .is_none());
        let error = kubernetes_from(&[("PROVISIONING_EXECUTOR", "docker")]).unwrap_err();
        assert_eq!(error.name, "PROVISIONING_EXECUTOR");
    }

    #[test]
    fn the_kubernetes_executor_needs_an_image_and_reads_its_settings() {
        let error = kubernetes_from(&[("PROVISIONING_EXECUTOR", "kubernetes")]).unwrap_err();
        assert_eq!(error.name, "PROVISIONING_K8S_RUNNER_IMAGE");

        let k8s = kubernetes_from(&[
            ("PROVISIONING_EXECUTOR", "kubernetes"),
            ("PROVISIONING_K8S_RUNNER_IMAGE", "runner:1"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(k8s.namespace, "default");
        assert_eq!(k8s.job_ttl_secs, 3600);
        assert_eq!(k8s.reconcile_every, std::time::Duration::from_secs(60));
        assert!(k8s.runner_nats_url.is_none());
        assert!(k8s.runner_nats_auth.is_none());
        assert!(k8s.backend_secret.is_none());

        let k8s = kubernetes_from(&[
            ("PROVISIONING_EXECUTOR", "kubernetes"),
            ("PROVISIONING_K8S_RUNNER_IMAGE", "runner:1"),
            ("PROVISIONING_K8S_NAMESPACE", "provisioning"),
            ("PROVISIONING_K8S_JOB_TTL_SECS", "60"),
            ("PROVISIONING_K8S_RECONCILE_SECS", "15"),
            ("PROVISIONING_K8S_BACKEND_SECRET", "tf-backend/password"),
            ("PROVISIONING_K8S_RUNNER_MEMORY_LIMIT", "2Gi"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(k8s.namespace, "provisioning");
        assert_eq!(k8s.job_ttl_secs, 60);
        assert_eq!(k8s.reconcile_every, std::time::Duration::from_secs(15));
        let secret = k8s.backend_secret.unwrap();
        assert_eq!(
            (secret.name.as_str(), secret.key.as_str()),
            ("tf-backend", "password")
        );
        assert_eq!(k8s.resources.memory_limit, "2Gi");

        for (name, value) in [
            ("PROVISIONING_K8S_BACKEND_SECRET", "tf-backend"),
            ("PROVISIONING_K8S_JOB_TTL_SECS", "-1"),
            ("PROVISIONING_K8S_NAMESPACE", "Not_A_Namespace"),
            ("PROVISIONING_K8S_JOB_DEADLINE_SECS", "900"),
            ("PROVISIONING_K8S_RUNNER_NATS_URL", "http://[bad"),
            ("PROVISIONING_K8S_RECONCILE_SECS", "0"),
            ("PROVISIONING_K8S_RUNNER_NATS_CREDS_SECRET", "nats-runner"),
        ] {
            let error = kubernetes_from(&[
                ("PROVISIONING_EXECUTOR", "kubernetes"),
                ("PROVISIONING_K8S_RUNNER_IMAGE", "runner:1"),
                (name, value),
            ])
            .unwrap_err();
            assert_eq!(error.name, name);
        }
    }

    #[test]
    fn runners_connect_to_nats_as_their_own_user_from_a_secret() {
        let base = [
            ("PROVISIONING_EXECUTOR", "kubernetes"),
            ("PROVISIONING_K8S_RUNNER_IMAGE", "runner:1"),
        ];
        let with = |more: &[(&'static str, &'static str)]| {
            kubernetes_from(&[&base[..], more].concat())
                .unwrap()
                .unwrap()
        };
        let k8s = with(&[
            (
                "PROVISIONING_K8S_RUNNER_NATS_URL",
                "nats://nats.provisioning.svc:4222",
            ),
            ("PROVISIONING_K8S_RUNNER_NATS_USER", "runner"),
            (
                "PROVISIONING_K8S_RUNNER_NATS_SECRET",
                "nats-users/runner-password",
            ),
        ]);
        assert_eq!(
            k8s.runner_nats_url.as_deref(),
            Some("nats://nats.provisioning.svc:4222")
        );
        match k8s.runner_nats_auth {
            Some(dispatcher::RunnerNatsAuth::Password { user, password }) => {
                assert_eq!(user, "runner");
                assert_eq!(
                    (password.name.as_str(), password.key.as_str()),
                    ("nats-users", "runner-password")
                );
            }
            other => panic!("{other:?}"),
        }
        let k8s = with(&[(
            "PROVISIONING_K8S_RUNNER_NATS_CREDS_SECRET",
            "nats-runner/runner.creds",
        )]);
        assert!(matches!(
            k8s.runner_nats_auth,
            Some(dispatcher::RunnerNatsAuth::CredentialsFile(file)) if file.name == "nats-runner"
        ));
        let both = kubernetes_from(
            &[
                &base[..],
                &[
                    ("PROVISIONING_K8S_RUNNER_NATS_USER", "runner"),
                    (
                        "PROVISIONING_K8S_RUNNER_NATS_SECRET",
                        "nats-users/runner-password",
                    ),
                    (
                        "PROVISIONING_K8S_RUNNER_NATS_CREDS_SECRET",
                        "nats-runner/runner.creds",
                    ),
                ],
            ]
            .concat(),
        )
        .unwrap_err();
        assert_eq!(both.name, "PROVISIONING_K8S_RUNNER_NATS_CREDS_SECRET");
        // A user needs its password's Secret, and a password its user.
        let half = |name, value| kubernetes_from(&[&base[..], &[(name, value)]].concat());
        let user_alone = half("PROVISIONING_K8S_RUNNER_NATS_USER", "runner");
        assert_eq!(
            user_alone.unwrap_err().name,
            "PROVISIONING_K8S_RUNNER_NATS_SECRET"
        );
        let password_alone = half(
            "PROVISIONING_K8S_RUNNER_NATS_SECRET",
            "nats-users/runner-password",
        );
        assert_eq!(
            password_alone.unwrap_err().name,
            "PROVISIONING_K8S_RUNNER_NATS_USER"
        );
    }
}
