//! The answers of a run no one can be asked during (`etch -p`): every
//! question is refused, unless `--approve-all` allows them; a command
//! outside the sandbox needs `--allow-unsandboxed` itself.

use etch_tool::ApprovalRequest;

use super::{Answer, AskFuture, Asker, Why};

/// `-p`'s flags, as an asker.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unattended {
    /// `--approve-all`.
    pub approve_all: bool,
    /// `--allow-unsandboxed`.
    pub allow_unsandboxed: bool,
}

impl Asker for Unattended {
    fn who(&self) -> &'static str {
        "flag"
    }

    fn ask<'a>(&'a self, request: ApprovalRequest<'a>, why: Why) -> AskFuture<'a> {
        let answer = if why == Why::Bypass {
            if self.allow_unsandboxed {
                Answer::Once
            } else {
                Answer::Refuse(
                    "etch -p runs no command outside the sandbox unless started with \
                     --allow-unsandboxed; run it inside the sandbox"
                        .to_owned(),
                )
            }
        } else if self.approve_all {
            Answer::Once
        } else {
            Answer::Refuse(format!(
                "this {} call needs the user's approval ({}), and etch -p cannot ask (start it \
                 with --approve-all to allow such calls)",
                request.tool,
                why.as_str()
            ))
        };
        Box::pin(std::future::ready(answer))
    }
}

#[cfg(test)]
mod tests {
    use etch_tool::ProgressSink;
    use serde_json::json;

    use super::*;

    /// `-p` refuses what would ask, unless its flags allow it; a bypass
    /// needs its own flag.
    #[test]
    fn unattended_runs_answer_by_their_flags() {
        let answer = |asker: Unattended, why: Why| {
            let args = json!({"command": "x"});
            let progress = ProgressSink::default();
            let request = ApprovalRequest {
                call_id: "c1",
                tool: "bash",
                args: &args,
                cwd: std::path::Path::new("/w"),
                session_id: "s",
                progress: &progress,
                read_only: false,
            };
            tokio::runtime::Builder::new_current_thread()
                .build()
                .map(|rt| rt.block_on(asker.ask(request, why)))
                .ok()
        };
        let none = Unattended::default();
        assert!(
            matches!(answer(none, Why::Bypass), Some(Answer::Refuse(why)) if why.contains("--allow-unsandboxed"))
        );
        assert!(
            matches!(answer(none, Why::Always), Some(Answer::Refuse(why)) if why.contains("--approve-all"))
        );
        let all = Unattended {
            approve_all: true,
            allow_unsandboxed: false,
        };
        assert_eq!(answer(all, Why::Listed), Some(Answer::Once));
        assert!(matches!(answer(all, Why::Bypass), Some(Answer::Refuse(_))));
        let unsandboxed = Unattended {
            approve_all: false,
            allow_unsandboxed: true,
        };
        assert_eq!(answer(unsandboxed, Why::Bypass), Some(Answer::Once));
    }
}
