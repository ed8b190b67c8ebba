//! `etch config check | show --effective | schema` (E-CLI-09, E-CFG-17..19),
//! and how every other command reports configuration problems. `config
//! check` also checks the skills a run would see, since a skill with a bad
//! name or description is configuration that silently does nothing.
//!
//! Loading, merging and validation live in `etch-config`; this module only
//! prints its diagnostics and picks exit codes: `config check` exits 1 on
//! any problem (unknown keys included); a run refuses to start on an error
//! (a value it would silently ignore) and warns about unknown keys; other
//! commands only warn.

use std::path::Path;

use etch_config::{Loaded, Severity};

use crate::cli::ConfigAction;
use crate::exit::{self, Failure};
use crate::output::print_line;

/// Runs a `config` action; `cwd` and `home` locate the skills `check`
/// validates.
pub fn run(
    action: &ConfigAction,
    loaded: Loaded,
    cwd: &Path,
    home: Option<&Path>,
) -> Result<(), Failure> {
    match action {
        ConfigAction::Check => check(&loaded.strict(), &etch_prompt::skill_problems(cwd, home)),
        ConfigAction::Show { effective } => {
            if !effective {
                return Err(Failure::usage(
                    "etch config show needs --effective (the merged configuration with defaults); \
                     see etch config show --help",
                ));
            }
            for diagnostic in &loaded.diagnostics {
                diag!("etch: {}: {diagnostic}", diagnostic.severity);
            }
            crate::output::print_text(&loaded.effective_toml());
            Ok(())
        }
        ConfigAction::Schema => {
            let text = serde_json::to_string_pretty(&etch_config::schema_json()).map_err(|e| {
                Failure::new(
                    exit::FAILED,
                    anyhow::anyhow!("could not encode the schema: {e}"),
                )
            })?;
            print_line(&text);
            Ok(())
        }
    }
}

/// Hook matchers that can never match a built-in tool under their
/// protocol but would under the other (`bash` on a Claude Code hook),
/// each naming its file and what was likely meant.
pub fn matcher_problems(hooks: &[etch_config::HookEntry]) -> Vec<String> {
    hooks
        .iter()
        .filter_map(|hook| {
            let event = etch_hooks::HookEvent::parse(&hook.event)?;
            let why = etch_hooks::claude::matcher_warning(event, &hook.protocol, &hook.matcher)?;
            Some(format!(
                "{}: [[hooks.{}]] {why}",
                hook.source.display(),
                hook.event
            ))
        })
        .collect()
}

/// `config check`: every problem (configuration files, then skills) on
/// stderr, a summary line on stdout.
fn check(loaded: &Loaded, skill_problems: &[String]) -> Result<(), Failure> {
    let files: Vec<String> = [&loaded.files.user, &loaded.files.project]
        .into_iter()
        .flatten()
        .map(|p| p.display().to_string())
        .collect();
    for diagnostic in &loaded.diagnostics {
        diag!("etch: {}: {diagnostic}", diagnostic.severity);
    }
    for problem in skill_problems {
        diag!("etch: error: skill {problem}");
    }
    let matchers = matcher_problems(&loaded.config.hooks);
    for problem in &matchers {
        diag!("etch: error: {problem}");
    }
    let checked = if files.is_empty() {
        "no config files found (~/.etch/config.toml, .etch/config.toml); the defaults apply"
            .to_owned()
    } else {
        files.join(", ")
    };
    let n = loaded.diagnostics.len() + skill_problems.len() + matchers.len();
    if loaded.has_errors() || !skill_problems.is_empty() || !matchers.is_empty() {
        let mut places = if loaded.diagnostics.is_empty() && matchers.is_empty() {
            Vec::new()
        } else {
            vec![checked.clone()]
        };
        if !skill_problems.is_empty() {
            places.push("the skills".to_owned());
        }
        return Err(Failure::new(
            exit::FAILED,
            anyhow::anyhow!(
                "{n} problem{} in {}",
                if n == 1 { "" } else { "s" },
                places.join(" and ")
            ),
        ));
    }
    print_line(&format!("config ok: {checked}"));
    Ok(())
}

/// Reports problems before another command runs. With `strict` (commands
/// that call a model), an error stops the command: running with a value
/// silently dropped would surprise the user more than a refusal.
pub fn report(loaded: &Loaded, strict: bool) -> Result<(), Failure> {
    for diagnostic in &loaded.diagnostics {
        let label = match diagnostic.severity {
            Severity::Error if strict => "error",
            Severity::Error | Severity::Warning => "warning",
        };
        diag!("etch: {label}: {diagnostic}");
    }
    if strict && loaded.has_errors() {
        return Err(Failure::new(
            exit::FAILED,
            anyhow::anyhow!(
                "the configuration has errors (listed above); fix them or see etch config check"
            ),
        ));
    }
    Ok(())
}
