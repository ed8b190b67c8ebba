//! The guard every background process runs under: `etch __proc-guard
//! PARENT -- PROGRAM ARGS...` starts the command in its own process group
//! (the one etch made for the guard) and waits for it. When etch dies,
//! even by SIGKILL, the kernel tells the guard (the parent-death signal)
//! and the guard kills the whole group, so nothing a session started
//! outlives it. Otherwise the guard passes the command's end through: it
//! exits with the command's code, or dies of the command's signal, so
//! etch reports what really happened (a SIGKILLed command is "killed",
//! never "exited 0").
//!
//! A signal etch sends to the group while it lives (`kill`) reaches the
//! command directly; the guard ignores it and waits. It runs before any
//! thread starts, since signals are blocked here for the process.
//!
//! One limit: a command ended by a signal the guard cannot die of
//! itself is reported as the shell would, exit code 128 + the signal
//! (141 for SIGPIPE, which Rust's runtime ignores; 139 for SIGSEGV,
//! which its stack-overflow handler takes): resetting them needs
//! `unsafe`, which the workspace forbids.
//!
//! This module must not know what the command is.

use std::ffi::OsString;
use std::process::Command;

use nix::sys::signal::{SigSet, Signal, killpg, raise};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, getpgrp, getppid};

/// The first argument that runs the guard.
pub const GUARD: &str = "__proc-guard";

/// Runs the guard with its arguments (after [`GUARD`]); returns only when
/// it could not start the command, with the reason (etch then exits 126).
pub fn main(args: &[OsString]) -> String {
    match run(args) {
        Ok(never) => match never {},
        Err(why) => why,
    }
}

/// [`main`], with `Ok` impossible.
fn run(args: &[OsString]) -> Result<std::convert::Infallible, String> {
    let parent = args
        .first()
        .and_then(|a| a.to_str())
        .and_then(|a| a.parse::<i32>().ok())
        .map(Pid::from_raw)
        .ok_or("the guard needs the parent's process id first")?;
    if args.get(1).and_then(|a| a.to_str()) != Some("--") {
        return Err("`--` must follow the parent's process id".to_owned());
    }
    let Some((program, rest)) = args[2..].split_first() else {
        return Err("no program to run".to_owned());
    };
    // The command starts first, with the signal mask the guard was
    // given; then the guard blocks the signals it waits for, and only
    // then asks to hear of etch's death, so that no signal can end the
    // guard without its group. etch dying before that is seen below.
    let child = Command::new(program)
        .args(rest)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.to_string_lossy()))?;
    let child = Pid::from_raw(i32::try_from(child.id()).map_err(|e| e.to_string())?);
    let mut signals = SigSet::empty();
    for signal in [
        Signal::SIGHUP,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGCHLD,
    ] {
        signals.add(signal);
    }
    signals
        .thread_block()
        .map_err(|e| format!("cannot block signals: {e}"))?;
    nix::sys::prctl::set_pdeathsig(Signal::SIGHUP)
        .map_err(|e| format!("cannot set the parent-death signal: {e}"))?;
    if getppid() != parent {
        // etch died while the command started: so does everything.
        let _ = killpg(getpgrp(), Signal::SIGKILL);
    }
    loop {
        match waitpid(child, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(_, code)) => std::process::exit(code),
            Ok(WaitStatus::Signaled(_, signal, _)) => die_of(signal),
            Ok(_) => {}
            Err(e) => return Err(format!("cannot wait for the command: {e}")),
        }
        match signals.wait() {
            Ok(Signal::SIGCHLD) | Err(_) => {}
            Ok(_) if getppid() != parent => {
                // etch is gone: so is everything it started.
                let _ = killpg(getpgrp(), Signal::SIGKILL);
            }
            // etch signals the group itself; the command has it too.
            Ok(_) => {}
        }
    }
}

/// Ends this process by `signal`, as the command ended.
fn die_of(signal: Signal) -> ! {
    let mut only = SigSet::empty();
    only.add(signal);
    let _ = raise(signal);
    let _ = only.thread_unblock();
    // A signal whose default is not to end the process (it cannot have
    // ended the command then, but be exact anyway).
    std::process::exit(128 + signal as i32)
}
