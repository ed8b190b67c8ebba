//! The hook events (E-HOOK-03 in docs/requirements.md, and the
//! subagent events of issue 17) and what each
//! one allows: what its matcher is matched against, which output fields
//! it accepts (G5), and whether exit code 2 blocks (C12: only
//! `PreToolUse` and `UserPromptSubmit`; elsewhere it is a failure). This
//! module must not know how hooks run.

use std::fmt;

/// A hook event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    /// A session was created or resumed; the subject is `new` or `resume`.
    SessionStart,
    /// A prompt is about to be admitted; it may be blocked or rewritten.
    UserPromptSubmit,
    /// A round begins.
    TurnStart,
    /// A run ended; its final text is in the payload.
    TurnComplete,
    /// A model request is being built; the message list may be rewritten.
    ContextBuild,
    /// A tool call is about to be validated and scheduled; the subject is
    /// the tool's name.
    PreToolUse,
    /// A tool call ended; its output may be rewritten or redacted.
    PostToolUse,
    /// A compaction is about to run; the subject is its trigger.
    PreCompact,
    /// A compaction's summary is ready to be appended.
    PostCompact,
    /// A subagent's child session was created and is about to run; the
    /// subject is the profile. It may be blocked.
    SubagentStart,
    /// A subagent's child run ended; the subject is the profile.
    SubagentStop,
}

impl HookEvent {
    /// All events, in the order of E-HOOK-03.
    pub const ALL: [Self; 11] = [
        Self::SessionStart,
        Self::UserPromptSubmit,
        Self::TurnStart,
        Self::TurnComplete,
        Self::ContextBuild,
        Self::PreToolUse,
        Self::PostToolUse,
        Self::PreCompact,
        Self::PostCompact,
        Self::SubagentStart,
        Self::SubagentStop,
    ];

    /// The event's name as written in configuration and envelopes.
    pub fn name(self) -> &'static str {
        match self {
            Self::SessionStart => "SessionStart",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::TurnStart => "TurnStart",
            Self::TurnComplete => "TurnComplete",
            Self::ContextBuild => "ContextBuild",
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::PreCompact => "PreCompact",
            Self::PostCompact => "PostCompact",
            Self::SubagentStart => "SubagentStart",
            Self::SubagentStop => "SubagentStop",
        }
    }

    /// The event named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Whether matchers apply (E-HOOK-06): the other events run every
    /// hook configured for them.
    pub fn uses_matcher(self) -> bool {
        matches!(
            self,
            Self::SessionStart
                | Self::PreToolUse
                | Self::PostToolUse
                | Self::PreCompact
                | Self::PostCompact
                | Self::SubagentStart
                | Self::SubagentStop
        )
    }

    /// Whether exit code 2 blocks, with the trimmed stderr as the reason
    /// (C12); for every other event it is a failure.
    pub fn exit_2_blocks(self) -> bool {
        matches!(self, Self::PreToolUse | Self::UserPromptSubmit)
    }

    /// The output fields the event accepts (G5). Events whose output is
    /// ignored accept none: a field there is an error, not silence.
    pub fn output_fields(self) -> &'static [&'static str] {
        match self {
            Self::SessionStart | Self::TurnStart | Self::TurnComplete | Self::SubagentStop => &[],
            Self::SubagentStart => &["block", "reason"],
            Self::UserPromptSubmit => &["block", "reason", "prompt"],
            Self::ContextBuild => &["messages"],
            Self::PreToolUse => &["block", "reason", "arguments"],
            Self::PostToolUse => &["output"],
            Self::PreCompact => &["cancel", "reason", "summary"],
            Self::PostCompact => &["summary"],
        }
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_rules_follow_the_tables() {
        for event in HookEvent::ALL {
            assert_eq!(HookEvent::parse(event.name()), Some(event));
        }
        assert_eq!(HookEvent::parse("preTool"), None);
        assert!(HookEvent::PreToolUse.exit_2_blocks());
        assert!(!HookEvent::PostToolUse.exit_2_blocks());
        assert!(!HookEvent::TurnStart.uses_matcher());
        assert!(HookEvent::PostToolUse.output_fields().contains(&"output"));
    }

    /// The events are exactly the configuration's `[[hooks.<Event>]]`
    /// tables, in the same order.
    #[test]
    fn events_agree_with_the_configuration() {
        let names: Vec<&str> = HookEvent::ALL.into_iter().map(HookEvent::name).collect();
        assert_eq!(names, etch_config::HOOK_EVENTS);
    }
}
