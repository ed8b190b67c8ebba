//! `skill_md`: arbitrary bytes as a project's `SKILL.md`. Discovery
//! never panics; a skill it takes has a body that loads; every problem
//! it reports is one line (it reaches a terminal).

/// Checks one input.
pub fn check(data: &[u8]) {
    let Some(dir) = crate::scratch::dir() else {
        return;
    };
    let skill = dir.path().join(".etch").join("skills").join("fuzz");
    if std::fs::create_dir_all(&skill).is_err()
        || std::fs::write(skill.join("SKILL.md"), data).is_err()
    {
        return;
    }
    for problem in etch_prompt::skill_problems(dir.path(), None) {
        assert!(
            !problem.contains('\n'),
            "a problem spans lines: {problem:?}"
        );
    }
    let _ = etch_prompt::parse_skill_block(&String::from_utf8_lossy(data));
}
