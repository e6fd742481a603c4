//! On a terminal (a real pseudo-terminal, made by util-linux `script`): `vm create --wait`
//! shows its status lines and an animated spinner; the same command piped prints the status
//! lines only, without a spinner or escape codes; `NO_COLOR` leaves tables uncoloured on the
//! terminal.

use std::process::Stdio;

use crate::clusters::signed_in;
use crate::daemon::Daemon;
use crate::{cli, finish, Run};

/// The spinner's frames (progress.rs), without the blank it ends on.
const FRAMES: [char; 8] = ['⠁', '⠂', '⠄', '⡀', '⢀', '⠠', '⠐', '⠈'];

/// Runs `provisioning args` on a pseudo-terminal of 120 columns (its stdout and stderr both
/// the terminal, as in a shell), with `env` and without `NO_COLOR` unless `env` sets it;
/// `stdout` is everything the terminal showed.
async fn on_terminal(config: &std::path::Path, env: &[(&str, &str)], args: &[&str]) -> Run {
    let quote = |arg: &str| format!("'{}'", arg.replace('\'', r"'\''"));
    let mut line = vec![quote(env!("CARGO_BIN_EXE_provisioning"))];
    line.extend(args.iter().map(|a| quote(a)));
    let line = format!("stty cols 120 rows 40; exec {}", line.join(" "));
    let mut command = tokio::process::Command::new("script");
    command
        .args(["-qfec", &line, "/dev/null"])
        .env_remove("PROVISIONING_URL")
        .env_remove("PROVISIONING_TOKEN")
        .env_remove("NO_COLOR")
        .env("XDG_CONFIG_HOME", config)
        .env("TERM", "xterm")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("util-linux script runs");
    // Kept open until the end: `script` forwards its input to the terminal.
    let input = child.stdin.take();
    let run = finish(child).await;
    drop(input);
    run
}

/// Whether `text` holds an SGR escape (colour or bold: `ESC [ digits ; ... m`).
fn coloured(text: &str) -> bool {
    text.split('\x1b').skip(1).any(|rest| {
        let Some(codes) = rest.strip_prefix('[') else {
            return false;
        };
        let end = codes.find(|c: char| !(c.is_ascii_digit() || c == ';'));
        end.is_some_and(|at| at > 0 && codes[at..].starts_with('m'))
    })
}

fn create<'a>(key: &'a str, name: &'a str) -> Vec<&'a str> {
    vec![
        "vm",
        "create",
        "--provider",
        "local",
        "--template",
        "small",
        "--name",
        name,
        "--ssh-key",
        key,
        "--allow",
        "192.0.2.0/24",
        "--hours",
        "1",
        "--wait",
    ]
}

#[tokio::test]
async fn wait_shows_a_spinner_on_a_terminal_only_and_no_color_is_honoured_there() {
    let daemon = Daemon::start().await;
    let (home, key) = signed_in(&daemon).await;
    let config = home.path();

    let shown = on_terminal(config, &[], &create(&key, "tty-1"))
        .await
        .expect(0);
    let screen = &shown.stdout;
    for line in ["  requested", "  provisioning", "  provisioned (ip "] {
        assert!(screen.contains(line), "{line}: {shown:#?}");
    }
    let frames: Vec<char> = FRAMES.into_iter().filter(|f| screen.contains(*f)).collect();
    assert!(
        frames.len() >= 2,
        "the spinner turns: {frames:?} {shown:#?}"
    );
    assert!(
        screen.contains("\x1b["),
        "it is redrawn in place: {shown:#?}"
    );
    // A table on the terminal is coloured, unless NO_COLOR says otherwise.
    let table = on_terminal(config, &[], &["vm", "list"]).await.expect(0);
    assert!(coloured(&table.stdout), "{table:#?}");
    let plain = on_terminal(config, &[("NO_COLOR", "1")], &["vm", "list"])
        .await
        .expect(0);
    assert!(plain.stdout.contains("tty-1"), "{plain:#?}");
    assert!(!coloured(&plain.stdout), "{plain:#?}");
    let no_colour = on_terminal(config, &[("NO_COLOR", "1")], &create(&key, "tty-2"))
        .await
        .expect(0);
    assert!(
        no_colour.stdout.contains("  provisioned (ip "),
        "{no_colour:#?}"
    );
    assert!(!coloured(&no_colour.stdout), "{no_colour:#?}");

    // Piped: the status lines alone, no spinner and no escape code.
    let piped = cli(config, &[], &create(&key, "piped-1"), None)
        .await
        .expect(0);
    for line in ["  requested", "  provisioning", "  provisioned (ip "] {
        assert!(piped.stderr.contains(line), "{line}: {piped:#?}");
    }
    let all = format!("{}{}", piped.stdout, piped.stderr);
    assert!(!all.contains('\x1b'), "{piped:#?}");
    assert!(!FRAMES.iter().any(|f| all.contains(*f)), "{piped:#?}");
}
