//! Real hook commands through the runner: what a script reads, what its
//! answers mean, and every way a hook can misbehave (not found, not
//! executable, a flood of output, a child that keeps stdout open, a
//! timeout), each bounded in time and leaving no process behind.

#![allow(clippy::unwrap_used, clippy::panic, missing_docs)]

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use etch_config::HookEntry;
use etch_hooks::process::{self, Exit};
use etch_hooks::{HookEvent, Hooks, Outcome, envelope, run};
use serde_json::json;

fn block<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn entry(event: &str, matcher: &str, command: &str, timeout_seconds: u64) -> HookEntry {
    HookEntry {
        event: event.into(),
        matcher: matcher.into(),
        command: command.into(),
        timeout_seconds,
        disabled: false,
        protocol: "etch".into(),
        source: "/home/u/.etch/config.toml".into(),
    }
}

fn hooks(entries: &[HookEntry]) -> Hooks {
    Hooks::from_config(entries).unwrap()
}

fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

fn run_one(dir: &Path, event: &str, command: &str, timeout: u64) -> (Outcome, Duration) {
    let set = hooks(&[entry(event, "", command, timeout)]);
    let hook = &set.all()[0];
    let input = envelope(
        hook.event,
        dir,
        json!({"sessionId": "s1", "sessionPath": "/s.jsonl"}),
    );
    let ran = block(run(hook, dir, &input, &[]));
    (ran.outcome, ran.elapsed)
}

/// The script reads the envelope on stdin and answers with JSON.
#[test]
fn a_script_reads_the_envelope_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen.json");
    let cmd = script(
        dir.path(),
        "hook.sh",
        &format!(
            "cat > {}\necho '{{\"arguments\":\"{{}}\"}}'",
            seen.display()
        ),
    );
    let (outcome, _) = run_one(dir.path(), "PreToolUse", &cmd, 30);
    assert!(
        matches!(&outcome, Outcome::Ok(f) if f["arguments"] == "{}"),
        "{outcome:?}"
    );
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(input["version"], 1);
    assert_eq!(input["event"], "PreToolUse");
    assert_eq!(input["payload"]["sessionId"], "s1");
    assert_eq!(input["cwd"], dir.path().to_string_lossy().as_ref());
}

/// Exit 2 blocks with stderr as the reason where that blocks, and fails
/// elsewhere.
#[test]
fn exit_2_blocks_only_where_it_may() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = script(
        dir.path(),
        "deny.sh",
        "echo 'writes to .env are blocked' >&2; exit 2",
    );
    let (pre, _) = run_one(dir.path(), "PreToolUse", &cmd, 30);
    assert_eq!(
        pre,
        Outcome::Blocked(Some("writes to .env are blocked".into()))
    );
    let (post, _) = run_one(dir.path(), "PostToolUse", &cmd, 30);
    assert!(matches!(post, Outcome::Failed(why) if why.contains("blocks only")));
}

/// A missing command and one that is not executable fail, saying so.
#[test]
fn missing_and_unexecutable_hooks_fail() {
    let dir = tempfile::tempdir().unwrap();
    let (missing, _) = run_one(dir.path(), "PostToolUse", "./no-such-hook.sh", 30);
    assert!(
        matches!(&missing, Outcome::Failed(why) if why.contains("not found")),
        "{missing:?}"
    );
    let path = dir.path().join("plain.sh");
    std::fs::write(&path, "#!/bin/sh\necho hi\n").unwrap();
    let (plain, _) = run_one(dir.path(), "PostToolUse", "./plain.sh", 30);
    assert!(
        matches!(&plain, Outcome::Failed(why) if why.contains("not executable")),
        "{plain:?}"
    );
}

/// A hook that outlives its timeout while a child holds stdout open is
/// killed with the whole group, within the timeout plus a second.
#[test]
fn a_timeout_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("child.pid");
    let cmd = script(
        dir.path(),
        "slow.sh",
        &format!("sleep 30 &\necho $! > {}\nsleep 30", pid_file.display()),
    );
    let started = Instant::now();
    let (outcome, _) = run_one(dir.path(), "PostToolUse", &cmd, 1);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(
        matches!(&outcome, Outcome::Failed(why) if why.contains("timed out after 1 s")),
        "{outcome:?}"
    );
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    gone(pid.trim());
}

/// A hook that exits while a child it started keeps stdout open is done
/// when it exits; the child is killed.
#[test]
fn a_finished_hook_does_not_wait_for_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("child.pid");
    let cmd = script(
        dir.path(),
        "quick.sh",
        &format!("sleep 30 &\necho $! > {}\necho '{{}}'", pid_file.display()),
    );
    let started = Instant::now();
    let (outcome, _) = run_one(dir.path(), "PostToolUse", &cmd, 30);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(outcome, Outcome::Ok(serde_json::Map::new()));
    gone(std::fs::read_to_string(&pid_file).unwrap().trim());
}

/// 100 MB on stdout: bounded, killed at once, a clear error.
#[test]
fn a_flood_of_output_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (outcome, _) = run_one(dir.path(), "PostToolUse", "yes | head -c 100000000", 30);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        matches!(&outcome, Outcome::Failed(why) if why.contains("more than 4 MiB")),
        "{outcome:?}"
    );
}

/// Hooks never see the provider credentials (G18).
#[test]
fn credentials_are_not_passed_on() {
    let dir = tempfile::tempdir().unwrap();
    let env = process::hook_env([
        (
            OsString::from("OPENAI_API_KEY"),
            OsString::from("sk-secret"),
        ),
        (
            OsString::from("ANTHROPIC_API_KEY"),
            OsString::from("sk-ant"),
        ),
        (OsString::from("PATH"), std::env::var_os("PATH").unwrap()),
        (OsString::from("KEEP_ME"), OsString::from("yes")),
    ]);
    let finished = block(process::run(
        "env",
        dir.path(),
        b"",
        &env,
        Duration::from_secs(10),
    ))
    .unwrap();
    assert_eq!(finished.exit, Exit::Code(0));
    let out = String::from_utf8_lossy(&finished.stdout);
    assert!(out.contains("KEEP_ME=yes"));
    assert!(
        !out.contains("sk-secret") && !out.contains("sk-ant"),
        "{out}"
    );
}

/// Order is configuration order; matchers are anchored; events without
/// matchers run every hook; disabled hooks never run.
#[test]
fn hooks_are_chosen_in_order() {
    let mut disabled = entry("PreToolUse", "", "never", 30);
    disabled.disabled = true;
    let set = hooks(&[
        entry("PreToolUse", "bash|write", "first", 30),
        disabled,
        entry("PostToolUse", "", "post", 30),
        entry("PreToolUse", "", "second", 30),
        entry("TurnStart", "ignored-matcher", "turn", 30),
    ]);
    let names = |event, subject| -> Vec<String> {
        set.matching(event, subject)
            .map(|h| h.command.clone())
            .collect()
    };
    assert_eq!(names(HookEvent::PreToolUse, "bash"), ["first", "second"]);
    assert_eq!(names(HookEvent::PreToolUse, "my_bash"), ["second"]);
    assert_eq!(names(HookEvent::TurnStart, "anything"), ["turn"]);
    assert!(set.has(HookEvent::PostToolUse) && !set.has(HookEvent::ContextBuild));
    assert!(Hooks::from_config(&[entry("PreToolUse", "(", "x", 30)]).is_err());
}

/// Waits (bounded) until process `pid` no longer runs.
fn gone(pid: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Path::new(&format!("/proc/{pid}")).exists()
        && std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
    {
        assert!(Instant::now() < deadline, "process {pid} outlived its hook");
        std::thread::sleep(Duration::from_millis(20));
    }
}
