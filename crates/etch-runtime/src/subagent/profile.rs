//! A profile applied to a session's settings (E-SUB-03, E-SUB-10,
//! E-SUB-12): the provider flags a new child starts with, and what a
//! child session runs under whether new or resumed: its compaction
//! settings, round bound, allowlisted tools (never `task`, C38) and a
//! system prompt assembled for those tools plus the profile's
//! instructions file. A resumed child gets the same, so it does not come
//! back as an ordinary session with the parent's tools.
//!
//! This module must not know how a child is run or reported.

use std::path::Path;

use etch_config::SubagentProfile;
use etch_model::SystemLayer;
use etch_tool::ToolRegistry;

use super::TASK;
use crate::context::{Context, assemble};
use crate::paths;
use crate::provider::ProviderFlags;
use crate::settings::{Place, RunSettings};

/// The provider flags a new child of `profile` starts with, from the
/// parent's `flags` (`current`: the provider the parent uses). Another
/// provider gets neither the parent's model nor its endpoint, key or
/// API shape: those belong to the parent's service.
pub(crate) fn flags(
    parent: &ProviderFlags,
    current: &str,
    profile: &SubagentProfile,
) -> ProviderFlags {
    let mut flags = parent.clone();
    if let Some(provider) = &profile.provider
        && provider != current
    {
        flags.base_url = None;
        flags.api_key = None;
        flags.openai_api = None;
        flags.openai_transport = None;
        flags.model = None;
    }
    if let Some(provider) = &profile.provider {
        flags.provider = Some(provider.clone());
    }
    for (value, slot) in [
        (&profile.model, &mut flags.model),
        (&profile.openai_api, &mut flags.openai_api),
        (&profile.reasoning_effort, &mut flags.reasoning_effort),
        (&profile.reasoning_summary, &mut flags.reasoning_summary),
    ] {
        if let Some(value) = value {
            *slot = Some(value.clone());
        }
    }
    flags
}

/// Shapes a child session's place, settings and context by `profile`;
/// `Err` says what is wrong, naming the profile.
pub(crate) fn shape(
    place: &mut Place,
    settings: &mut RunSettings,
    context: &mut Context,
    profile: &SubagentProfile,
) -> Result<(), String> {
    let name = &profile.name;
    if let Some(auto) = profile.auto_compact {
        place.config.context.auto_compact = auto;
    }
    if let Some(tokens) = profile.auto_compact_threshold_tokens {
        place.config.context.auto_compact_threshold_tokens = tokens;
    }
    if let Some(rounds) = profile.max_tool_rounds {
        settings.max_tool_rounds = Some(rounds);
    }
    context.tools = child_tools(&context.tools, profile);
    // The prompt names the tools the child has, not the parent's.
    context.assembled = assemble(place, &context.tools);
    if let Some(file) = &profile.system_prompt_file {
        let path = paths::project_root(&place.cwd).join(file);
        inside_project(place, profile, &path)?;
        let text = std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "subagent profile {name}: cannot read its system_prompt_file {}: {e}",
                path.display()
            )
        })?;
        context.assembled.layers.push(SystemLayer {
            name: format!("subagent {name}: {}", path.display()),
            text,
        });
    }
    Ok(())
}

/// Refuses a project profile's `system_prompt_file` outside its project
/// (symlinks resolved): a cloned repository's profile could otherwise
/// hand the model any file the user can read, `~/.etch/auth/openai.json`
/// included, with no tool call at all. A profile in the user's own
/// `~/.etch/config.toml` may name any file.
fn inside_project(place: &Place, profile: &SubagentProfile, path: &Path) -> Result<(), String> {
    let user_file = place
        .home
        .as_deref()
        .map(|home| home.join(".etch").join("config.toml"));
    if user_file.as_deref() == Some(profile.source.as_path()) {
        return Ok(());
    }
    let root = profile
        .source
        .parent()
        .filter(|dir| dir.file_name().is_some_and(|n| n == ".etch"))
        .and_then(Path::parent)
        .unwrap_or_else(|| Path::new(""));
    let inside = match (path.canonicalize(), root.canonicalize()) {
        (Ok(file), Ok(root)) => file.starts_with(root),
        // A missing file is reported by the read that follows.
        (Err(_), _) => return Ok(()),
        (Ok(_), Err(_)) => false,
    };
    if inside {
        return Ok(());
    }
    Err(format!(
        "subagent profile {}: its system_prompt_file {} is outside the project {}; a profile from {} may only use instructions inside the project (define the profile in ~/.etch/config.toml to use another file)",
        profile.name,
        path.display(),
        root.display(),
        profile.source.display()
    ))
}

/// The registry a child of `profile` gets: `tools` (never `task`)
/// restricted to the profile's allowlist when it has one (E-SUB-10).
pub(crate) fn child_tools(tools: &ToolRegistry, profile: &SubagentProfile) -> ToolRegistry {
    let allowed = profile.allowed_tools.clone();
    tools.only(move |name| {
        name != TASK
            && allowed
                .as_ref()
                .is_none_or(|list| list.iter().any(|a| a == name))
    })
}

/// Shapes a resumed session that a subagent of profile `name` wrote
/// (E-SUB-09); `Err` when that profile is no longer configured.
pub fn resume_as_child(
    place: &mut Place,
    settings: &mut RunSettings,
    context: &mut Context,
    name: &str,
) -> Result<(), String> {
    let Some(profile) = place
        .config
        .subagents
        .profiles
        .iter()
        .find(|p| p.name == name)
        .cloned()
    else {
        return Err(format!(
            "this session is the child of subagent profile \"{name}\", which is no longer configured; add that [[subagents.profile]] back to resume it with its tools and instructions"
        ));
    };
    shape(place, settings, context, &profile)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// A profile with only what a test sets.
    fn profile(provider: Option<&str>, model: Option<&str>) -> SubagentProfile {
        SubagentProfile {
            name: "p".into(),
            description: None,
            provider: provider.map(str::to_owned),
            model: model.map(str::to_owned),
            openai_api: None,
            reasoning_effort: None,
            reasoning_summary: None,
            system_prompt_file: None,
            allowed_tools: None,
            max_tool_rounds: None,
            auto_compact: None,
            auto_compact_threshold_tokens: None,
            max_tokens: None,
            max_seconds: None,
            source: PathBuf::from("/c.toml"),
        }
    }

    /// The parent's key and endpoint stay with the parent's provider; a
    /// profile on the same provider keeps them and swaps only the model.
    #[test]
    fn credentials_stay_with_their_provider() {
        let parent = ProviderFlags {
            provider: Some("openai".into()),
            model: Some("big".into()),
            base_url: Some("http://127.0.0.1:1/v1".into()),
            api_key: Some("sk-parent".into()),
            ..ProviderFlags::default()
        };
        let other = flags(&parent, "openai", &profile(Some("anthropic"), None));
        assert_eq!(other.provider.as_deref(), Some("anthropic"));
        assert!(other.api_key.is_none() && other.base_url.is_none() && other.model.is_none());
        let same = flags(&parent, "openai", &profile(None, Some("small")));
        assert_eq!(same.api_key.as_deref(), Some("sk-parent"));
        assert_eq!(same.model.as_deref(), Some("small"));
        let named_same = flags(&parent, "openai", &profile(Some("openai"), None));
        assert_eq!(named_same.base_url, parent.base_url);
        assert_eq!(named_same.model.as_deref(), Some("big"));
    }
}
