//! The registry of active tools: one sorted, unified list (E-TOOL-02) of
//! the tools registered up front (built-ins) and those [`ToolSource`]s
//! offer as they become ready (plugins, which start in the background).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use etch_model::ToolSpec;

use crate::tool::Tool;

/// Tools that become available over time: a set of plugin processes
/// starting in the background. The registry asks it for what is ready
/// whenever it lists or looks up tools.
pub trait ToolSource: Send + Sync {
    /// The tools ready now, in the order they should win on a name clash
    /// (a source never offers a name twice or a registered tool's name).
    fn ready(&self) -> Vec<Arc<dyn Tool>>;

    /// Whether tools may still arrive (something is starting).
    fn pending(&self) -> bool;

    /// Waits until nothing is starting any more.
    fn settle(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;

    /// Waits until whatever could still offer tool `name` has started;
    /// by default, until nothing is starting.
    fn settle_for(&self, name: &str) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        let _ = name;
        self.settle()
    }

    /// What a run's first request waits for (bounded by the loop): the
    /// starting parts whose tools the model is meant to see from the
    /// first request on. Nothing, unless a source says otherwise.
    fn awaited(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(std::future::ready(()))
    }

    /// What went wrong since the last call (a plugin that would not start,
    /// one that died), as (source name, message); each is returned once.
    fn diagnostics(&self) -> Vec<(String, String)>;
}

/// A tool that cannot be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// The name is not a provider-compatible identifier.
    #[error("tool name {0:?} is invalid: use 1-64 characters from A-Z, a-z, 0-9, _ and -")]
    InvalidName(String),
    /// The parameters are not a JSON object schema.
    #[error("tool {0:?} has parameters that are not a JSON object schema (\"type\": \"object\")")]
    InvalidSchema(String),
    /// Two tools share a name.
    #[error("tool {0:?} is registered twice")]
    Duplicate(String),
}

/// Active tools by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    /// Tools sorted by name.
    tools: BTreeMap<String, Arc<dyn Tool>>,
    /// Where more tools come from.
    sources: Vec<Arc<dyn ToolSource>>,
    /// Which form of each spec the model is shown.
    profile: Profile,
}

/// How tools are described to the model (`[tools] profile`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// Every tool's full description and schema.
    #[default]
    Full,
    /// Shorter descriptions and schemas for small context windows and
    /// local servers ([`Tool::compact_spec`]), every parameter kept.
    Compact,
}

impl Profile {
    /// The name `[tools] profile` and `etch context` use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Compact => "compact",
        }
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

/// Whether `name` is a valid tool name and `parameters` an object schema
/// (E-PLUG-10), as [`ToolRegistry::register`] checks; for sources that
/// vet tools before offering them.
pub fn check_tool(name: &str, parameters: &serde_json::Value) -> Result<(), RegistryError> {
    if !valid_name(name) {
        return Err(RegistryError::InvalidName(name.to_owned()));
    }
    if parameters.get("type").and_then(|t| t.as_str()) != Some("object") {
        return Err(RegistryError::InvalidSchema(name.to_owned()));
    }
    Ok(())
}

/// Whether a name matches `^[A-Za-z0-9_-]{1,64}$`.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same registry showing its tools under `profile`.
    #[must_use]
    pub fn with_profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

    /// The profile the model is shown the tools under.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// Adds a tool after checking its name and schema shape.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let spec = tool.spec();
        check_tool(&spec.name, &spec.parameters)?;
        if self.tools.contains_key(&spec.name) {
            return Err(RegistryError::Duplicate(spec.name.clone()));
        }
        self.tools.insert(spec.name.clone(), tool);
        Ok(())
    }

    /// Adds a source of tools that become ready later.
    pub fn add_source(&mut self, source: Arc<dyn ToolSource>) {
        self.sources.push(source);
    }

    /// The sources of later tools.
    pub fn sources(&self) -> &[Arc<dyn ToolSource>] {
        &self.sources
    }

    /// Looks a tool up by name: registered first, then what the sources
    /// have ready.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        if let Some(tool) = self.tools.get(name) {
            return Some(Arc::clone(tool));
        }
        self.sources
            .iter()
            .flat_map(|s| s.ready())
            .find(|t| t.spec().name == name)
    }

    /// Whether a source is still starting, so a name not found now may
    /// still come.
    pub fn pending(&self) -> bool {
        self.sources.iter().any(|s| s.pending())
    }

    /// Waits until no source is starting.
    pub async fn settle(&self) {
        for source in &self.sources {
            source.settle().await;
        }
    }

    /// Every tool now (registered and ready), sorted by name; a source's
    /// tool whose name is taken is left out.
    fn all(&self) -> BTreeMap<String, Arc<dyn Tool>> {
        let mut all = self.tools.clone();
        for tool in self.sources.iter().flat_map(|s| s.ready()) {
            all.entry(tool.spec().name.clone()).or_insert(tool);
        }
        all
    }

    /// Specs of every tool that is available now, sorted by name, as sent
    /// to the model under the registry's profile: a tool whose backing
    /// process died is not offered.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.all()
            .values()
            .filter(|t| t.available())
            .map(|t| match self.profile {
                Profile::Compact => t.compact_spec().unwrap_or_else(|| t.spec()).clone(),
                Profile::Full => t.spec().clone(),
            })
            .collect()
    }

    /// The tools registered up front (not those of sources), by name.
    pub(crate) fn registered(&self) -> impl Iterator<Item = Arc<dyn Tool>> + '_ {
        self.tools.values().map(Arc::clone)
    }

    /// Adds a tool already checked when it was first registered (a
    /// wrapper of it keeps its spec).
    pub(crate) fn insert_unchecked(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.spec().name.clone(), tool);
    }

    /// Names of every tool, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The same tools, registered and from sources, restricted to the
    /// names `keep` accepts (a subagent's allowlist). The sources stay
    /// shared; their diagnostics are left to this registry's owner.
    #[must_use]
    pub fn only(&self, keep: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        let keep: Arc<dyn Fn(&str) -> bool + Send + Sync> = Arc::new(keep);
        Self {
            tools: self
                .tools
                .iter()
                .filter(|(name, _)| keep(name))
                .map(|(name, tool)| (name.clone(), Arc::clone(tool)))
                .collect(),
            sources: self
                .sources
                .iter()
                .map(|source| {
                    Arc::new(Only {
                        inner: Arc::clone(source),
                        keep: Arc::clone(&keep),
                    }) as Arc<dyn ToolSource>
                })
                .collect(),
            profile: self.profile,
        }
    }
}

/// A source seen through a name filter ([`ToolRegistry::only`]).
struct Only {
    /// The shared source.
    inner: Arc<dyn ToolSource>,
    /// Which names pass.
    keep: Arc<dyn Fn(&str) -> bool + Send + Sync>,
}

impl ToolSource for Only {
    fn ready(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools = self.inner.ready();
        tools.retain(|t| (self.keep)(&t.spec().name));
        tools
    }

    fn pending(&self) -> bool {
        self.inner.pending()
    }

    fn settle(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        self.inner.settle()
    }

    fn settle_for(&self, name: &str) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        if (self.keep)(name) {
            self.inner.settle_for(name)
        } else {
            Box::pin(std::future::ready(()))
        }
    }

    fn awaited(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        self.inner.awaited()
    }

    /// Nothing: the source's owner reports its diagnostics, once.
    fn diagnostics(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{ToolContext, ToolFuture, ToolOutput};
    use serde_json::{Value, json};

    /// A tool with a configurable spec.
    struct Named(ToolSpec);

    impl Tool for Named {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        fn execute(&self, _args: Value, _ctx: ToolContext) -> ToolFuture<'_> {
            Box::pin(async { Ok(ToolOutput::text("ok")) })
        }
    }

    /// Builds a test tool.
    fn tool(name: &str, params: Value) -> Arc<dyn Tool> {
        Arc::new(Named(ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: params,
        }))
    }

    /// Names and schemas are checked; the list comes out sorted.
    #[test]
    fn registers_checks_and_sorts() {
        let mut r = ToolRegistry::new();
        r.register(tool("zeta", json!({"type": "object"}))).unwrap();
        r.register(tool("alpha", json!({"type": "object"})))
            .unwrap();
        assert_eq!(r.names(), ["alpha", "zeta"]);
        assert_eq!(r.specs()[0].name, "alpha");
        assert_eq!(
            r.register(tool("alpha", json!({"type": "object"}))),
            Err(RegistryError::Duplicate("alpha".into()))
        );
        assert!(matches!(
            r.register(tool("a b", json!({"type": "object"}))),
            Err(RegistryError::InvalidName(_))
        ));
        assert!(matches!(
            r.register(tool("x", json!({"type": "string"}))),
            Err(RegistryError::InvalidSchema(_))
        ));
    }

    /// A source with fixed tools that reports one diagnostic.
    struct Fixed(Vec<Arc<dyn Tool>>);

    impl ToolSource for Fixed {
        fn ready(&self) -> Vec<Arc<dyn Tool>> {
            self.0.clone()
        }
        fn pending(&self) -> bool {
            false
        }
        fn settle(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
            Box::pin(std::future::ready(()))
        }
        fn diagnostics(&self) -> Vec<(String, String)> {
            vec![("p".into(), "said once".into())]
        }
    }

    /// `only` keeps the allowed registered and source tools, shares the
    /// sources and leaves their diagnostics to the owner.
    #[test]
    fn only_keeps_the_allowed_names() {
        let mut r = ToolRegistry::new();
        r.register(tool("read", json!({"type": "object"}))).unwrap();
        r.register(tool("bash", json!({"type": "object"}))).unwrap();
        r.add_source(Arc::new(Fixed(vec![
            tool("p_one", json!({"type": "object"})),
            tool("p_two", json!({"type": "object"})),
        ])));
        let child = r.only(|name| name == "read" || name == "p_two");
        let names: Vec<String> = child.specs().into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["p_two", "read"]);
        assert!(child.get("bash").is_none() && child.get("p_one").is_none());
        assert!(child.sources()[0].diagnostics().is_empty());
        assert_eq!(r.specs().len(), 4);
    }
}
