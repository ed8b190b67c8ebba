//! Child processes started the one way etch starts them (the bash tool,
//! hooks, plugins): in a process group of their own, so that everything a
//! command starts can be stopped with one signal to the group; with
//! exactly the environment given (the caller has scrubbed it: G18 in
//! docs/requirements.md); and killed if the handle is dropped. It must not
//! know what runs or what its output means.

use std::ffi::OsStr;
use std::path::Path;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

/// `program` with `args`, to run in `cwd` with exactly `env`, in a group
/// of its own and killed when its handle is dropped. The caller sets the
/// pipes and spawns it.
pub fn command<K, V, A>(
    program: impl AsRef<OsStr>,
    args: impl IntoIterator<Item = A>,
    cwd: &Path,
    env: impl IntoIterator<Item = (K, V)>,
) -> Command
where
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
    A: AsRef<OsStr>,
{
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(env)
        .process_group(0)
        .kill_on_drop(true);
    command
}

/// The process group of a child started by [`command`] (its own pid);
/// `None` once it has been reaped.
pub fn group_of(child: &Child) -> Option<Pid> {
    child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw)
}

/// Sends `signal` to every process of the group. A group already empty
/// (`ESRCH`) is fine: the kernel keeps a pid allocated while it names a
/// group with members, so the id cannot have been reused meanwhile.
pub fn signal_group(group: Option<Pid>, signal: Signal) {
    if let Some(pgid) = group {
        let _ = killpg(pgid, signal);
    }
}

/// Kills a group when dropped: whoever stops waiting for a command (a
/// cancelled run) leaves none of its processes behind.
#[derive(Debug)]
pub struct KillOnDrop(pub Option<Pid>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        signal_group(self.0, Signal::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::process::Stdio;

    use super::*;

    /// The child sees only the environment given, runs in `cwd`, leads a
    /// group of its own, and the whole group goes with one signal.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_group_of_its_own_with_exactly_the_environment_given() {
        let dir = std::env::temp_dir();
        let out = command(
            "sh",
            ["-c", "echo \"$ONLY:$HOME:$(pwd)\""],
            &dir,
            [("ONLY", "x")],
        )
        .stdout(Stdio::piped())
        .output()
        .await
        .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let cwd = dir.canonicalize().unwrap();
        assert_eq!(text.trim(), format!("x::{}", cwd.display()));
        let mut child = command("sh", ["-c", "sleep 30 & sleep 30"], &dir, [("A", "b")])
            .spawn()
            .unwrap();
        let group = group_of(&child);
        assert_eq!(
            nix::unistd::getpgid(group).ok(),
            group,
            "the child leads its own group"
        );
        drop(KillOnDrop(group));
        let status = child.wait().await.unwrap();
        assert!(!status.success());
    }
}
