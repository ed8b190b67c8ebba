//! The helper's side: confining this process, then becoming the command.
//! `etch __sandbox-exec POLICY -- PROGRAM ARGS...` runs here before any
//! async runtime or other thread starts (Landlock and seccomp apply to
//! the calling thread and what it starts, so a second thread would stay
//! free): the parent-death signal, the read-only view of the protected
//! directories, `no_new_privs`, the Landlock ruleset, the network filter,
//! and then `exec`, which keeps all of them.
//!
//! Every step is best effort the way the user was promised: what the
//! kernel cannot do lowers the reported enforcement instead of failing
//! the command, and only a step that the kernel supports but refuses is
//! an error. This module must not know who asked for the command.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, LandlockStatus, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use nix::sys::prctl;
use nix::sys::signal::Signal;

use crate::error::SandboxError;
use crate::plan::{self, Rights};
use crate::policy::{Mode, Policy};
use crate::report::{Enforcement, Report};
use crate::{filter, protect};

/// The newest Landlock ABI whose rights etch asks for; newer kernels
/// enforce the same, older ones what they can.
const TARGET_ABI: ABI = ABI::V6;

/// The environment variable that makes the helper (and the parent's
/// check) act as if the kernel had this Landlock ABI; `0` simulates a
/// kernel or container without Landlock.
pub const ABI_OVERRIDE_VAR: &str = "ETCH_SANDBOX_ABI";

/// The simulated ABI, when the override is set to a number.
pub(crate) fn abi_override() -> Option<u8> {
    std::env::var(ABI_OVERRIDE_VAR).ok()?.trim().parse().ok()
}

/// Runs the helper with its arguments (after `__sandbox-exec`): returns
/// only when it could not become the command. `--probe POLICY` confines
/// itself and prints the [`Report`] as JSON instead of running anything.
pub fn main(args: &[OsString]) -> SandboxError {
    match run(args) {
        Ok(never) => match never {},
        Err(e) => e,
    }
}

/// [`main`], with `Ok` impossible.
fn run(args: &[OsString]) -> Result<std::convert::Infallible, SandboxError> {
    let text = |a: &OsString| a.to_str().map(str::to_owned);
    let (probe, rest) = match args.first().and_then(text).as_deref() {
        Some("--probe") => (true, &args[1..]),
        _ => (false, args),
    };
    let policy = rest
        .first()
        .and_then(text)
        .ok_or_else(|| SandboxError::Usage("the policy is missing".into()))?;
    let policy = Policy::decode(&policy)?;
    let report = confine(&policy)?;
    if probe {
        println!("{}", serde_json::to_string(&report).unwrap_or_default());
        std::process::exit(0);
    }
    let command = match rest.get(1).and_then(text).as_deref() {
        Some("--") => &rest[2..],
        _ => return Err(SandboxError::Usage("`--` must follow the policy".into())),
    };
    let Some((program, program_args)) = command.split_first() else {
        return Err(SandboxError::Usage("no program to run".into()));
    };
    let error = std::process::Command::new(program)
        .args(program_args)
        .exec();
    Err(SandboxError::Exec {
        program: program.to_string_lossy().into_owned(),
        source: error,
    })
}

/// Confines this process under `policy` and says how far that held.
pub fn confine(policy: &Policy) -> Result<Report, SandboxError> {
    prctl::set_pdeathsig(Signal::SIGKILL).map_err(|source| SandboxError::Process {
        what: "the parent-death signal",
        source,
    })?;
    let mut report = Report::off();
    if policy.mode == Mode::Off {
        return Ok(report);
    }
    report.mode = policy.mode;
    let simulated = abi_override();
    // The protected directories need the namespace in workspace-write
    // mode (read-only mode writes nowhere); the denied ones use it when
    // it is there.
    let protect =
        policy.mode == Mode::WorkspaceWrite && policy.protected.iter().any(|d| d.is_dir());
    let hide = policy.deny_read.iter().any(|d| d.is_dir());
    let namespace = simulated != Some(0) && (protect || hide) && protect::enter().is_ok();
    report.protected = !protect || (namespace && protect::read_only(&policy.protected));
    let unhidden = if namespace {
        protect::hide(&policy.deny_read)
    } else {
        policy.deny_read.clone()
    };
    prctl::set_no_new_privs().map_err(|source| SandboxError::Process {
        what: "no_new_privs",
        source,
    })?;
    let (landlock, abi) = match simulated {
        Some(0) => (Enforcement::None, 0),
        _ => landlock(&Policy {
            deny_read: unhidden,
            ..policy.clone()
        })?,
    };
    report.landlock = landlock;
    report.abi = simulated.unwrap_or(abi);
    report.network_filtered = policy.network || (simulated != Some(0) && filter::deny_network()?);
    Ok(report)
}

/// Applies the Landlock ruleset for `policy` (its `deny_read` being the
/// paths the namespace did not hide): how far it held, and the kernel's
/// ABI.
fn landlock(policy: &Policy) -> Result<(Enforcement, u8), SandboxError> {
    let err = |e: landlock::RulesetError| SandboxError::Landlock(e.to_string());
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(TARGET_ABI))
        .map_err(err)?
        .scope(Scope::from_all(TARGET_ABI))
        .map_err(err)?;
    if !policy.network {
        // With no rule for them, TCP bind and connect are refused (ABI 4
        // on); the seccomp filter covers older kernels and UDP.
        ruleset = ruleset
            .handle_access(AccessNet::from_all(TARGET_ABI))
            .map_err(err)?;
    }
    let mut created = ruleset.create().map_err(err)?;
    for rule in plan::rules(policy) {
        let Ok(fd) = PathFd::new(&rule.path) else {
            // A root that does not exist (yet) grants nothing.
            continue;
        };
        let mut access = match rule.rights {
            Rights::List => AccessFs::ReadDir.into(),
            Rights::Read => AccessFs::from_read(TARGET_ABI),
            Rights::Write => AccessFs::from_all(TARGET_ABI),
        };
        if !rule.path.is_dir() {
            access &= AccessFs::from_file(TARGET_ABI);
        }
        if access.is_empty() {
            continue;
        }
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(err)?;
    }
    let status = created.restrict_self().map_err(err)?;
    let abi = match status.landlock {
        LandlockStatus::Available {
            effective_abi,
            kernel_abi,
        } => kernel_abi
            .and_then(|k| u8::try_from(k).ok())
            .unwrap_or(effective_abi as u8),
        LandlockStatus::NotEnabled | LandlockStatus::NotImplemented => 0,
    };
    let enforcement = match status.ruleset {
        RulesetStatus::FullyEnforced => Enforcement::Full,
        RulesetStatus::PartiallyEnforced => Enforcement::Partial,
        RulesetStatus::NotEnforced => Enforcement::None,
    };
    Ok((enforcement, abi))
}

/// Whether this kernel can enforce a sandbox at all (Landlock of any
/// ABI), for choosing the default mode; the override decides when set.
/// Creates a ruleset and drops it: nothing is restricted.
pub fn kernel_supports() -> bool {
    if let Some(abi) = abi_override() {
        return abi > 0;
    }
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::Execute)
        .and_then(Ruleset::create)
        .is_ok()
}
