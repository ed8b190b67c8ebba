//! The skills catalog text (G21, P-SKILL-07, E-CTX-11): a lead line and an
//! `<available_skills>` block with each skill's name, description and
//! `SKILL.md` location.
//!
//! This module owns the exact catalog wording and its escaping. It must not
//! discover skills or decide whether the catalog is shown (that depends on the
//! `read` tool, P-PROMPT-10, and is the assembler's call).

use crate::paths::slash_path;
use crate::skills::Skill;

/// The line that introduces the catalog (G21).
pub const CATALOG_LEAD: &str = "The following skills provide specialized instructions. \
     Use the read tool to load a skill's SKILL.md when the task matches its description.";

/// The catalog for `skills`, one `<skill>` line each, sorted by name; `None`
/// when there are no skills, so no empty block reaches the prompt.
pub fn catalog(skills: &[Skill]) -> Option<String> {
    if skills.is_empty() {
        return None;
    }
    let mut sorted: Vec<&Skill> = skills.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut out = String::with_capacity(CATALOG_LEAD.len() + 40 + skills.len() * 200);
    out.push_str(CATALOG_LEAD);
    out.push_str("\n<available_skills>\n");
    for skill in sorted {
        out.push_str("<skill><name>");
        escape_into(&skill.name, &mut out);
        out.push_str("</name><description>");
        escape_into(&skill.description, &mut out);
        out.push_str("</description><location>");
        escape_into(&slash_path(&skill.location), &mut out);
        out.push_str("</location></skill>\n");
    }
    out.push_str("</available_skills>");
    Some(out)
}

/// Appends `text` with `&`, `<` and `>` escaped, so a description cannot
/// close or forge catalog elements.
fn escape_into(text: &str, out: &mut String) {
    let mut done = 0;
    for (at, special) in text.match_indices(['&', '<', '>']) {
        out.push_str(&text[done..at]);
        out.push_str(match special {
            "&" => "&amp;",
            "<" => "&lt;",
            _ => "&gt;",
        });
        done = at + special.len();
    }
    out.push_str(&text[done..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A skill with the given name and description under `/s`.
    fn skill(name: &str, description: &str) -> Skill {
        Skill {
            name: name.into(),
            description: description.into(),
            location: format!("/s/{name}/SKILL.md").into(),
        }
    }

    /// Exact text, sorted by name, escaped.
    #[test]
    fn exact_and_sorted() {
        let text = catalog(&[skill("zeta", "Last"), skill("alpha", "Use <b> & \"c\"")]).unwrap();
        assert_eq!(
            text,
            "The following skills provide specialized instructions. Use the read tool to load a \
             skill's SKILL.md when the task matches its description.\n\
             <available_skills>\n\
             <skill><name>alpha</name><description>Use &lt;b&gt; &amp; \"c\"</description>\
             <location>/s/alpha/SKILL.md</location></skill>\n\
             <skill><name>zeta</name><description>Last</description>\
             <location>/s/zeta/SKILL.md</location></skill>\n\
             </available_skills>"
        );
        assert_eq!(catalog(&[]), None);
    }
}
