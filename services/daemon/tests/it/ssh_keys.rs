//! The SSH key registry (`/api/v1/ssh-keys`) and the keys of VM requests: which kinds are
//! accepted, fingerprints as `ssh-keygen` prints them, one owner's keys, generated pairs
//! whose private half is answered once and stored nowhere.

use std::path::Path;

use daemon::Roles;
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, vm_request, TestApp};
use crate::wire::{GeneratedSshKey, Problem, SshKey, Vm};

const ED25519: &str = include_str!("keys/ed25519_256.pub");
const ECDSA_256: &str = include_str!("keys/ecdsa_256.pub");
const ECDSA_384: &str = include_str!("keys/ecdsa_384.pub");
const ECDSA_521: &str = include_str!("keys/ecdsa_521.pub");
const RSA_3072: &str = include_str!("keys/rsa_3072.pub");
const RSA_2048: &str = include_str!("keys/rsa_2048.pub");
const DSA: &str = include_str!("keys/dsa_1024.pub");

/// No Terraform needed: VMs stay requested.
async fn app() -> TestApp {
    spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await
}

async fn add(app: &TestApp, name: &str, public_key: &str, status: u16) -> Value {
    let body = json!({"name": name, "public_key": public_key});
    app.post_json("/api/v1/ssh-keys", &body, status).await
}

/// The SHA-256 fingerprint of a public key, worked out apart from the server: by
/// `ssh-keygen -l` where it is installed, else by hashing the key's decoded blob.
fn expected_fingerprint(public_key: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("key.pub");
    std::fs::write(&file, public_key).unwrap();
    match std::process::Command::new("ssh-keygen")
        .args(["-l", "-E", "sha256", "-f"])
        .arg(&file)
        .output()
    {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8(out.stdout).unwrap();
            text.split_whitespace().nth(1).unwrap().to_owned()
        }
        _ => sha256_fingerprint(public_key),
    }
}

fn sha256_fingerprint(public_key: &str) -> String {
    use ssh_key::sha2::{Digest, Sha256};
    let blob = public_key.split_whitespace().nth(1).unwrap();
    let digest = Sha256::digest(base64_decode(blob));
    format!("SHA256:{}", base64_encode(&digest))
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64_decode(text: &str) -> Vec<u8> {
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = vec![];
    for c in text.bytes().filter(|&c| c != b'=') {
        bits = bits << 6 | B64.iter().position(|&b| b == c).unwrap() as u32;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    out
}

/// Unpadded, as OpenSSH prints fingerprints.
fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, &b| n << 8 | b as u32) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

#[test]
fn the_fallback_fingerprint_agrees_with_ssh_keygen() {
    // `ssh-keygen -l -E sha256` of the tests' default key.
    assert_eq!(
        sha256_fingerprint(crate::helpers::SSH_KEY),
        "SHA256:16NXSXWwKLOvPn4clXh86VT+zBN2M+ea9RBUvghtbXM"
    );
}

#[tokio::test]
async fn ed25519_ecdsa_and_rsa_3072_keys_are_registered_with_their_fingerprints() {
    let app = app().await;
    let keys = [
        ("ed25519", ED25519, "ssh-ed25519"),
        ("p256", ECDSA_256, "ecdsa-sha2-nistp256"),
        ("p384", ECDSA_384, "ecdsa-sha2-nistp384"),
        ("p521", ECDSA_521, "ecdsa-sha2-nistp521"),
        ("rsa", RSA_3072, "ssh-rsa"),
    ];
    let mut ids = vec![];
    for (name, public_key, algorithm) in keys {
        let key: SshKey = serde_json::from_value(add(&app, name, public_key, 201).await).unwrap();
        assert_eq!(key.name, name);
        assert_eq!(key.algorithm, algorithm);
        assert_eq!(key.fingerprint, expected_fingerprint(public_key), "{name}");
        assert_eq!(key.public_key, public_key.trim());
        let read: SshKey = app.get_json(&format!("/api/v1/ssh-keys/{}", key.id)).await;
        assert_eq!(read, key);
        ids.push(key.id);
    }
    let listed: Vec<SshKey> = app.get_json("/api/v1/ssh-keys").await;
    let listed: Vec<String> = listed.into_iter().map(|k| k.id).collect();
    assert_eq!(listed, ids, "oldest first");
}

#[tokio::test]
async fn short_rsa_dsa_and_malformed_keys_are_refused_with_the_reason() {
    let app = app().await;
    let problem: Problem = serde_json::from_value(add(&app, "old", RSA_2048, 422).await).unwrap();
    assert_eq!(problem.code, "invalid_field");
    assert_eq!(
        problem.detail,
        "public_key: RSA keys must have at least 3072 bits; this one has 2048"
    );
    let problem: Problem = serde_json::from_value(add(&app, "dsa", DSA, 422).await).unwrap();
    assert_eq!(problem.detail, "public_key: DSA keys are not accepted");
    let problem: Problem =
        serde_json::from_value(add(&app, "junk", "ssh-ed25519 AAAA", 422).await).unwrap();
    assert!(problem.detail.starts_with("public_key: "), "{problem:?}");
    let problem: Problem = serde_json::from_value(add(&app, "", ED25519, 422).await).unwrap();
    assert!(problem.detail.starts_with("name: "), "{problem:?}");

    // The same rules for a key carried in a VM request.
    for (key, reason) in [
        (
            RSA_2048,
            "RSA keys must have at least 3072 bits; this one has 2048",
        ),
        (DSA, "DSA keys are not accepted"),
    ] {
        let body = vm_request(json!({"ssh_public_key": key}));
        let problem: Problem = app.post_json("/api/v1/vms", &body, 422).await;
        assert_eq!(problem.detail, format!("ssh_public_key: {reason}"));
    }
    let keys: Vec<SshKey> = app.get_json("/api/v1/ssh-keys").await;
    assert!(keys.is_empty(), "{keys:?}");
    assert_eq!(app.count_events().await, 0, "no VM was requested");
}

#[tokio::test]
async fn the_same_key_twice_is_a_conflict_and_a_deleted_key_is_gone() {
    let app = app().await;
    let first: SshKey = serde_json::from_value(add(&app, "laptop", ED25519, 201).await).unwrap();
    // Another comment does not make another key.
    let (kind, blob) = ED25519.split_once(' ').unwrap();
    let blob = blob.split_whitespace().next().unwrap();
    let recommented = format!("{kind} {blob} other@host");
    let problem: Problem =
        serde_json::from_value(add(&app, "again", &recommented, 409).await).unwrap();
    assert_eq!(problem.code, "conflict");
    assert!(problem.detail.contains(&first.fingerprint), "{problem:?}");
    assert!(problem.detail.contains(&first.id), "{problem:?}");

    let path = format!("/api/v1/ssh-keys/{}", first.id);
    let deleted = app.delete(&path).send().await.unwrap();
    assert_eq!(deleted.status(), 204);
    assert_eq!(app.get(&path).send().await.unwrap().status(), 404);
    assert_eq!(app.delete(&path).send().await.unwrap().status(), 404);
    let keys: Vec<SshKey> = app.get_json("/api/v1/ssh-keys").await;
    assert!(keys.is_empty());
    // Deleted, it can be registered again.
    add(&app, "laptop", ED25519, 201).await;
}

#[tokio::test]
async fn a_generated_key_answers_its_private_half_once_and_stores_only_the_public_one() {
    let app = app().await;
    let response = app
        .post("/api/v1/ssh-keys/generate")
        .json(&json!({"name": "made here"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    assert_eq!(response.headers().get("cache-control").unwrap(), "no-store");
    let generated: GeneratedSshKey = response.json().await.unwrap();
    let pem = &generated.private_key;
    assert!(
        pem.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----\n"),
        "{pem}"
    );
    assert_eq!(generated.key.algorithm, "ssh-ed25519");

    // The private key is a valid one whose public half is the registered key.
    let private = ssh_key::PrivateKey::from_openssh(pem).unwrap();
    assert_eq!(private.algorithm(), ssh_key::Algorithm::Ed25519);
    assert!(!private.is_encrypted());
    let derived = private.public_key().to_openssh().unwrap();
    assert_eq!(blob_of(&derived), blob_of(&generated.key.public_key));
    assert_eq!(
        generated.key.fingerprint,
        expected_fingerprint(&generated.key.public_key)
    );
    if let Some(public) = ssh_keygen_public_of(pem) {
        assert_eq!(blob_of(&public), blob_of(&generated.key.public_key));
    }
    let stored: SshKey = app
        .get_json(&format!("/api/v1/ssh-keys/{}", generated.key.id))
        .await;
    assert_eq!(stored, generated.key);

    // No table holds any line of the private key.
    let secret_lines: Vec<&str> = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    assert!(!secret_lines.is_empty());
    for line in secret_lines {
        let holders = tables_containing(&app, line).await;
        assert!(holders.is_empty(), "{line:?} is stored in {holders:?}");
    }
    // The search would find it: the public key is in ssh_keys.
    let public_blob = blob_of(&generated.key.public_key);
    assert_eq!(
        tables_containing(&app, &public_blob).await,
        ["public.ssh_keys"]
    );
}

/// The base64 blob of an OpenSSH public key line: the key without its type and comment.
fn blob_of(public_key: &str) -> String {
    public_key.split_whitespace().nth(1).unwrap().to_owned()
}

/// `ssh-keygen -y` of a private key, when ssh-keygen is installed.
fn ssh_keygen_public_of(pem: &str) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("id");
    std::fs::write(&file, pem).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = std::process::Command::new("ssh-keygen")
        .arg("-y")
        .arg("-f")
        .arg(Path::new(&file))
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap())
}

/// The tables of the test's database (every schema but the system's) with a row whose
/// text holds `needle`.
async fn tables_containing(app: &TestApp, needle: &str) -> Vec<String> {
    let tables: Vec<(String, String)> = store::sqlx::query_as(
        "SELECT table_schema, table_name FROM information_schema.tables
         WHERE table_type = 'BASE TABLE'
           AND table_schema NOT IN ('pg_catalog', 'information_schema')
         ORDER BY 1, 2",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert!(tables.iter().any(|(_, t)| t == "events"), "{tables:?}");
    let mut holders = vec![];
    for (schema, table) in tables {
        let found: bool = store::sqlx::query_scalar(&format!(
            "SELECT EXISTS (SELECT 1 FROM \"{schema}\".\"{table}\" t
                            WHERE strpos(t::text, $1) > 0)"
        ))
        .bind(needle)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        if found {
            holders.push(format!("{schema}.{table}"));
        }
    }
    holders
}

#[tokio::test]
async fn a_vm_is_created_with_a_registered_key_of_its_owner_only() {
    let app = app().await;
    let key: SshKey = serde_json::from_value(add(&app, "p256", ECDSA_256, 201).await).unwrap();
    let body = vm_request(json!({"ssh_public_key": null, "ssh_key_id": key.id}));
    let vm: Vm = app.post_json("/api/v1/vms", &body, 202).await;
    let events = app.events(&vm.id).await;
    assert_eq!(events[0].kind, "Requested");
    assert_eq!(events[0].data["spec"]["ssh_public_key"], key.public_key);

    // Another owner's key, as the identity work will make them: not seen, not usable.
    let theirs = uuid::Uuid::new_v4();
    store::sqlx::query(
        "INSERT INTO ssh_keys (id, owner, name, public_key, algorithm, fingerprint, created_at)
         VALUES ($1, 'someone-else', 'theirs', $2, 'ssh-ed25519', 'SHA256:theirs', now())",
    )
    .bind(theirs)
    .bind(ED25519.trim())
    .execute(&app.pool)
    .await
    .unwrap();
    let path = format!("/api/v1/ssh-keys/{theirs}");
    assert_eq!(app.get(&path).send().await.unwrap().status(), 404);
    assert_eq!(app.delete(&path).send().await.unwrap().status(), 404);
    let mine: Vec<SshKey> = app.get_json("/api/v1/ssh-keys").await;
    assert_eq!(mine, std::slice::from_ref(&key));

    let events_before = app.count_events().await;
    for (fields, detail) in [
        (
            json!({"ssh_public_key": null, "ssh_key_id": theirs.to_string()}),
            format!("ssh_key_id: no SSH key {theirs} is registered"),
        ),
        (
            json!({"ssh_public_key": null, "ssh_key_id": uuid::Uuid::new_v4().to_string()}),
            "ssh_key_id: no SSH key".to_owned(),
        ),
        (
            json!({"ssh_public_key": null, "ssh_key_id": "laptop"}),
            "ssh_key_id: \"laptop\" is not a key id".to_owned(),
        ),
        (
            json!({"ssh_key_id": key.id}),
            "ssh_public_key: give either ssh_public_key or ssh_key_id, not both".to_owned(),
        ),
        (
            json!({"ssh_public_key": null}),
            "ssh_public_key: missing".to_owned(),
        ),
    ] {
        let problem: Problem = app.post_json("/api/v1/vms", &vm_request(fields), 422).await;
        assert_eq!(problem.code, "invalid_field");
        assert!(problem.detail.starts_with(&detail), "{problem:?}");
    }
    assert_eq!(
        app.count_events().await,
        events_before,
        "nothing was recorded"
    );
}
