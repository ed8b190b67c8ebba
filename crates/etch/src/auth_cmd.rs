//! `etch auth login|status|logout` (E-CLI-10, E-AUTH-02, E-AUTH-07).
//!
//! A thin layer over `etch-auth`: it picks the home directory, prints the
//! device code for the user, and reports which credentials a run would use.
//! Tokens are never printed.

use std::path::PathBuf;

use clap::Subcommand;
use etch_auth::{CredentialStore, LoginOptions, oauth};
use etch_runtime::provider::Auto;

use crate::exit::{self, Failure};
use crate::output::print_line;

/// Auth subcommands.
#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Log in with a ChatGPT/Codex subscription (device flow): open the link
    /// shown, enter the code, and etch stores the tokens in
    /// ~/.etch/auth/openai.json (mode 0600).
    #[command(after_help = "Example:\n  etch auth login")]
    Login,
    /// Show which credentials a run would use (the auth mode label) and
    /// whether a login is stored.
    #[command(after_help = "The active mode is one of:\n  \
        OpenAI: ChatGPT/Codex subscription   (etch auth login)\n  \
        OpenAI: Platform API key             (--api-key, OPENAI_API_KEY, OPENROUTER_API_KEY)\n  \
        OpenAI: Codex access token           (CODEX_ACCESS_TOKEN)\n  \
        Anthropic: API key                   (ANTHROPIC_API_KEY)\n\n\
        Example:\n  etch auth status")]
    Status,
    /// Remove the stored login.
    #[command(after_help = "Example:\n  etch auth logout")]
    Logout,
    /// Copy Codex CLI's ChatGPT login ($CODEX_HOME/auth.json, else
    /// ~/.codex/auth.json) into etch's store, after showing the account
    /// and asking. Codex's file is only read, and only when asked to.
    #[command(after_help = "Examples:\n  etch auth import codex\n  etch auth import codex --yes")]
    Import {
        /// Whose login: codex.
        #[arg(value_name = "AGENT", value_parser = ["codex"])]
        agent: String,
        /// Import without asking (needed when stdin is not a terminal).
        #[arg(long)]
        yes: bool,
    },
}

/// The user's home directory, required for the credential file.
fn home() -> Result<PathBuf, Failure> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| {
            Failure::new(
                exit::FAILED,
                anyhow::anyhow!("HOME is not set; etch keeps its login under ~/.etch/auth"),
            )
        })
}

/// Runs an auth subcommand.
pub async fn run(command: AuthCommand, api_key: Option<String>) -> Result<(), Failure> {
    let store = CredentialStore::in_home(&home()?);
    match command {
        AuthCommand::Login => login(&store).await,
        AuthCommand::Status => status(&store, api_key),
        AuthCommand::Import { agent: _, yes } => import_codex(&store, yes),
        AuthCommand::Logout => {
            let removed = store.delete().map_err(|e| Failure::new(exit::FAILED, e))?;
            if removed {
                print_line(&format!("Logged out: removed {}", store.path().display()));
            } else {
                print_line(&format!("No stored login at {}", store.path().display()));
            }
            Ok(())
        }
    }
}

/// The device flow, cancelled by Ctrl-C.
async fn login(store: &CredentialStore) -> Result<(), Failure> {
    let issuer = oauth::issuer_from_env();
    let options = LoginOptions::default();
    let flow = oauth::login_and_save(store, &issuer, &options, |code| {
        print_line(&format!(
            "To log in, open {} in a browser and enter the code {}",
            code.verification_url, code.user_code
        ));
        print_line("Waiting for approval (Ctrl-C to cancel)...");
    });
    let result = tokio::select! {
        r = flow => r,
        _ = tokio::signal::ctrl_c() => {
            return Err(Failure::new(exit::INTERRUPTED, anyhow::anyhow!("login cancelled")));
        }
    };
    let credentials = result.map_err(|e| Failure::new(exit::FAILED, e))?;
    let account = credentials
        .account_id
        .as_deref()
        .map(|a| format!(" (account {a})"))
        .unwrap_or_default();
    print_line(&format!(
        "Logged in: OpenAI: ChatGPT/Codex subscription{account}; credentials saved to {}",
        store.path().display()
    ));
    Ok(())
}

/// Copies Codex's login into `store`, once the user said yes.
fn import_codex(store: &CredentialStore, yes: bool) -> Result<(), Failure> {
    let codex_home = std::env::var_os("CODEX_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let path = etch_auth::codex::login_file(codex_home.as_deref(), &home()?);
    let login = etch_auth::codex::read_login(&path).map_err(|e| Failure::new(exit::FAILED, e))?;
    let who = match (&login.email, &login.credentials.account_id) {
        (Some(email), Some(account)) => format!("{email} (account {account})"),
        (Some(email), None) => email.clone(),
        (None, Some(account)) => format!("account {account}"),
        (None, None) => "an unnamed account".to_owned(),
    };
    print_line(&format!(
        "Codex login at {}: {}, access token valid until {}",
        path.display(),
        etch_sanitize::visible(&who),
        login
            .credentials
            .expires_at
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    ));
    if store.exists() {
        print_line(&format!(
            "It replaces the login stored at {}.",
            store.path().display()
        ));
    }
    if !yes {
        use std::io::{BufRead as _, IsTerminal as _, Write as _};
        if !std::io::stdin().is_terminal() {
            return Err(Failure::usage(
                "not imported: stdin is not a terminal to ask on; run `etch auth import codex --yes` to import it",
            ));
        }
        print!("Import it into {}? [y/N] ", store.path().display());
        let _ = std::io::stdout().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if !matches!(answer.trim(), "y" | "Y" | "yes" | "Yes") {
            print_line("Not imported.");
            return Ok(());
        }
    }
    store
        .save(&login.credentials)
        .map_err(|e| Failure::new(exit::FAILED, e))?;
    print_line(&format!(
        "Imported: OpenAI: ChatGPT/Codex subscription; credentials saved to {}",
        store.path().display()
    ));
    Ok(())
}

/// Reports the active auth mode and the stored login.
fn status(store: &CredentialStore, api_key: Option<String>) -> Result<(), Failure> {
    let stored = store.load().map_err(|e| Failure::new(exit::FAILED, e))?;
    // The runtime's own rule, so this says what a run would pick.
    let flags = etch_runtime::ProviderFlags {
        api_key,
        ..etch_runtime::ProviderFlags::default()
    };
    match etch_runtime::provider::auto(&flags) {
        Auto::OpenAi(mode) => print_line(&format!("active: {}", mode.label())),
        Auto::Anthropic => print_line("active: Anthropic: API key (ANTHROPIC_API_KEY)"),
        Auto::Echo => print_line("active: none; runs use the offline echo model"),
    }
    match stored {
        Some(creds) => {
            let account = creds.account_id.as_deref().unwrap_or("unknown account");
            print_line(&format!(
                "stored login: {} ({account}, access token valid until {})",
                store.path().display(),
                creds
                    .expires_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ));
        }
        None => print_line(&format!(
            "stored login: none at {} (run 'etch auth login')",
            store.path().display()
        )),
    }
    Ok(())
}
