//! `run.sh` run for real with bash, in a temporary folder instead of the VM's, with stand-in
//! install and health scripts and a local HTTP listener as the callbacks.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::mpsc;
use std::{fs, thread};

use domain::taskservs::{OnError, PlannedTaskserv, TaskservName};
use taskservs::{driver, Rendered, StepCallbacks, BASE_DIR};

fn step(name: &str, on_error: OnError, max_retries: u8) -> PlannedTaskserv {
    PlannedTaskserv {
        name: TaskservName::parse(name).unwrap(),
        version: "1.0.0".into(),
        params: Default::default(),
        on_error,
        max_retries,
        requested: true,
    }
}

fn scripts(install: &str) -> Rendered {
    Rendered {
        install: format!("#!/bin/bash\n{install}\n"),
        health: "#!/bin/bash\n# Health timeout (seconds): 5\ntrue\n".into(),
    }
}

/// Answers every request with 200 and sends "<path> <body>" down the channel.
fn listener() -> (String, mpsc::Receiver<String>) {
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", server.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for stream in server.incoming() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
            let mut length = 0;
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                if header.trim().is_empty() {
                    break;
                }
                if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .unwrap();
            let _ = tx.send(format!("{path} {}", String::from_utf8_lossy(&body)));
        }
    });
    (url, rx)
}

#[test]
fn run_sh_reports_each_step_continues_past_continue_and_stops_at_stop() {
    let (url, reports) = listener();
    let plan = [
        step("good", OnError::Stop, 0),
        step("flaky", OnError::Retry, 1),
        step("broken", OnError::Continue, 0),
        step("fatal", OnError::Stop, 0),
        step("never", OnError::Stop, 0),
    ];
    let rendered = [
        scripts("echo 'url=http://x/?a=1&b=2' >>\"$TASKSERV_OUTPUTS\""),
        // Fails the first time, passes the second.
        scripts("f=\"$(dirname \"$0\")/tried\"; [ -e \"$f\" ] || { touch \"$f\"; exit 3; }"),
        scripts("echo broken line; exit 4"),
        scripts("exit 5"),
        scripts("echo never ran >/dev/null"),
    ];
    let callbacks: Vec<_> = plan
        .iter()
        .map(|s| StepCallbacks {
            started: format!("{url}/{}/started/SECRET", s.name),
            installed: format!("{url}/{}/installed/SECRET", s.name),
            failed: format!("{url}/{}/failed/SECRET", s.name),
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().to_str().unwrap();
    for file in driver(&plan, &rendered, &callbacks) {
        let path = file.path.replace(BASE_DIR, base);
        fs::create_dir_all(std::path::Path::new(&path).parent().unwrap()).unwrap();
        fs::write(&path, file.content.replace(BASE_DIR, base)).unwrap();
    }
    let out = Command::new("bash")
        .arg(format!("{base}/run.sh"))
        .output()
        .unwrap();
    let console = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{console}");
    assert!(!console.contains("SECRET"), "{console}");
    assert!(console.contains("broken line"), "{console}");

    let got: Vec<String> = reports.try_iter().collect();
    let paths: Vec<&str> = got.iter().map(|r| r.split(' ').next().unwrap()).collect();
    assert_eq!(
        paths,
        [
            "/good/started/SECRET",
            "/good/installed/SECRET",
            "/flaky/started/SECRET",
            "/flaky/installed/SECRET",
            "/broken/started/SECRET",
            "/broken/failed/SECRET",
            "/fatal/started/SECRET",
            "/fatal/failed/SECRET",
        ]
    );
    assert_eq!(
        got[1],
        "/good/installed/SECRET outputs=url%3Dhttp%3A%2F%2Fx%2F%3Fa%3D1%26b%3D2%0A"
    );
    assert!(got[5].contains("exit_code=4&last_lines="), "{}", got[5]);
    assert!(got[5].contains("broken+line"), "{}", got[5]);
    assert!(got[7].contains("exit_code=5"), "{}", got[7]);

    // A second run skips what was installed and tries the rest again.
    let again = Command::new("bash")
        .arg(format!("{base}/run.sh"))
        .output()
        .unwrap();
    let console = String::from_utf8_lossy(&again.stdout);
    assert!(
        console.contains("good was installed by an earlier run"),
        "{console}"
    );
}
