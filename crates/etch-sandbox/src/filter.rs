//! The network filter: a seccomp program that makes `socket()` for
//! internet and raw packet sockets fail with `EPERM`, and refuses
//! `io_uring` (whose requests would not pass through the filter). Local
//! (`AF_UNIX`) and netlink sockets stay allowed. Landlock only restricts
//! TCP from ABI 4 and UDP from ABI 10, so this is what keeps DNS and
//! UDP off on most kernels.
//!
//! This module must not know when the network is wanted.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::error::SandboxError;

/// Socket families refused.
const DENIED_FAMILIES: [i32; 3] = [libc::AF_INET, libc::AF_INET6, libc::AF_PACKET];

/// The architecture the filter is for; `None` where seccompiler has no
/// tables (the filter is then skipped and the status says so).
fn arch() -> Option<TargetArch> {
    TargetArch::try_from(std::env::consts::ARCH).ok()
}

/// Loads the filter into this process; `Ok(false)` when this
/// architecture has none.
pub(crate) fn deny_network() -> Result<bool, SandboxError> {
    let Some(program) = program()? else {
        return Ok(false);
    };
    seccompiler::apply_filter(&program).map_err(|e| SandboxError::Seccomp(e.to_string()))?;
    Ok(true)
}

/// The compiled filter for this architecture.
fn program() -> Result<Option<BpfProgram>, SandboxError> {
    let Some(arch) = arch() else {
        return Ok(None);
    };
    let err = |e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string());
    let mut socket_rules = Vec::new();
    for family in DENIED_FAMILIES {
        let family = u64::try_from(family).unwrap_or_default();
        let condition = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, family)
            .map_err(err)?;
        socket_rules.push(SeccompRule::new(vec![condition]).map_err(err)?);
    }
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, socket_rules);
    for call in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(call, Vec::new());
    }
    let eperm = u32::try_from(libc::EPERM).unwrap_or(1);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(eperm),
        arch,
    )
    .map_err(err)?;
    let program: BpfProgram = filter.try_into().map_err(err)?;
    Ok(Some(program))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The filter compiles on the architectures the tables cover.
    #[test]
    fn the_filter_compiles() {
        if arch().is_some() {
            assert!(!program().unwrap().unwrap().is_empty());
        }
    }
}
