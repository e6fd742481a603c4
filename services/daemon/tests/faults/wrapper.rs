//! A Terraform wrapper script (`TERRAFORM_BIN`) that a test steers through files in its own
//! directory. For `apply` and `destroy` it records the invocation, prints numbered marker
//! lines (`marker <vm> <n>`, numbered on per VM across runs) with optional pauses, can hold
//! after the first marker until released or hang without output, then execs the real
//! Terraform. Anything else (`init`, `output`) goes straight to the real binary.
//!
//! Files in the directory: `invocations` (`<action> <vm> <pid> <runner pid>` a line),
//! `printed-<vm>` (each marker line printed, in order), `held-<vm>` (written while a run
//! is held), and the switches `markers`, `pause`, `hold`, `hang` the test writes.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct Wrapper {
    dir: tempfile::TempDir,
    /// The script: the `TERRAFORM_BIN` of the daemon.
    pub path: PathBuf,
}

/// One run of `apply` or `destroy`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub action: String,
    pub vm: String,
    /// The wrapper's pid, which becomes Terraform's (it execs) and leads its process group.
    pub pid: i32,
    /// The runner's pid.
    pub runner: i32,
}

const SCRIPT: &str = r#"
case "$1" in apply|destroy) ;; *) exec "$REAL" "$@" ;; esac
VM="${TF_WORKSPACE#vm-}"
echo "$1 $VM $$ $PPID" >> "$DIR/invocations"
count=$(cat "$DIR/markers" 2>/dev/null || echo 3)
pause=$(cat "$DIR/pause" 2>/dev/null || echo 0)
k=0
while [ "$k" -lt "$count" ]; do
  k=$((k+1))
  n=$(flock "$DIR/lock" sh -c 'n=$(( $(cat "$1" 2>/dev/null || echo 0) + 1 )); echo $n > "$1"; echo $n' _ "$DIR/count-$VM")
  echo "marker $VM $n" >> "$DIR/printed-$VM"
  echo "marker $VM $n"
  if [ "$k" = 1 ] && [ -e "$DIR/hold" ]; then
    echo "$$" > "$DIR/held-$VM"
    while [ -e "$DIR/hold" ]; do sleep 0.05; done
  fi
  [ "$pause" = 0 ] || sleep "$pause"
done
if [ -e "$DIR/hang" ]; then
  # Hung for good: an interrupt does not stop it either.
  trap '' INT
  echo "$$" > "$DIR/hung-$VM"
  sleep 3600
  exit 1
fi
exec "$REAL" "$@"
"#;

impl Wrapper {
    /// Writes the script; three markers a run, no pause, no hold.
    pub fn new() -> Wrapper {
        let dir = tempfile::tempdir().unwrap();
        let real = std::env::var("TERRAFORM_BIN").unwrap_or_else(|_| "terraform".into());
        let path = dir.path().join("terraform");
        let script = format!(
            "#!/bin/sh\nDIR='{}'\nREAL='{real}'\n{SCRIPT}",
            dir.path().display()
        );
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        Wrapper { dir, path }
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Marker lines a run prints from now on.
    pub fn set_markers(&self, n: u32) {
        std::fs::write(self.dir().join("markers"), n.to_string()).unwrap();
    }

    /// Seconds (fractions allowed) to wait after each marker, from now on.
    pub fn set_pause(&self, secs: f64) {
        std::fs::write(self.dir().join("pause"), secs.to_string()).unwrap();
    }

    /// Runs started from now on stop after their first marker until `release`.
    pub fn hold(&self) {
        std::fs::write(self.dir().join("hold"), "").unwrap();
    }

    /// Lets held runs go on.
    pub fn release(&self) {
        let _ = std::fs::remove_file(self.dir().join("hold"));
    }

    /// Runs started from now on print their markers, then hang without output (an hour).
    pub fn hang(&self, on: bool) {
        let path = self.dir().join("hang");
        if on {
            std::fs::write(path, "").unwrap();
        } else {
            let _ = std::fs::remove_file(path);
        }
    }

    /// Waits until a run of `vm` is held after its first marker; the wrapper's pid.
    pub async fn wait_held(&self, vm: &str, within: Duration) -> i32 {
        let path = self.dir().join(format!("held-{vm}"));
        let text = crate::daemon::wait_for_file(&path, within).await;
        let _ = std::fs::remove_file(&path);
        text.trim().parse().unwrap()
    }

    /// Waits until a run of `vm` hangs; the wrapper's pid.
    pub async fn wait_hung(&self, vm: &str, within: Duration) -> i32 {
        let path = self.dir().join(format!("hung-{vm}"));
        let text = crate::daemon::wait_for_file(&path, within).await;
        text.trim().parse().unwrap()
    }

    /// Every `apply` and `destroy` run so far, in the order they started.
    pub fn invocations(&self) -> Vec<Invocation> {
        let text = std::fs::read_to_string(self.dir().join("invocations")).unwrap_or_default();
        text.lines()
            .filter_map(|line| {
                let f: Vec<&str> = line.split(' ').collect();
                Some(Invocation {
                    action: f.first()?.to_string(),
                    vm: f.get(1)?.to_string(),
                    pid: f.get(2)?.parse().ok()?,
                    runner: f.get(3)?.parse().ok()?,
                })
            })
            .collect()
    }

    /// How many `action` runs of `vm` started.
    pub fn count(&self, vm: &str, action: &str) -> usize {
        self.invocations()
            .iter()
            .filter(|i| i.vm == vm && i.action == action)
            .count()
    }

    /// Waits until `action` of `vm` started `n` times; the last of them.
    pub async fn wait_invocations(
        &self,
        vm: &str,
        action: &str,
        n: usize,
        within: Duration,
    ) -> Invocation {
        let deadline = Instant::now() + within;
        loop {
            let runs: Vec<Invocation> = self
                .invocations()
                .into_iter()
                .filter(|i| i.vm == vm && i.action == action)
                .collect();
            if runs.len() >= n {
                return runs[n - 1].clone();
            }
            assert!(
                Instant::now() < deadline,
                "{action} of {vm} ran {} times, not {n}, within {within:?}",
                runs.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The marker lines printed for `vm`, in order.
    pub fn printed(&self, vm: &str) -> Vec<String> {
        std::fs::read_to_string(self.dir().join(format!("printed-{vm}")))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Wrapper {
    fn drop(&mut self) {
        // A held or hung run outlives the test otherwise: its group is Terraform's.
        self.release();
        for run in self.invocations() {
            crate::daemon::signal("KILL", -run.pid);
        }
    }
}
