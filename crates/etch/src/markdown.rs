//! Structural rendering of `-p` answers for a terminal (E-TERM-07, C24).
//!
//! Only structure, no styling: markdown tables are re-laid out with aligned
//! columns so they read as tables in a terminal. Everything else passes
//! through unchanged, and nothing here runs when stdout is not a terminal,
//! so piped output and tests see the model's text verbatim.

/// Aligns every markdown table in `text`; other lines are kept as they are.
pub fn render(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let is_table = is_row(lines[i]) && lines.get(i + 1).is_some_and(|l| is_separator(l));
        if !is_table {
            out.push(lines[i].to_string());
            i += 1;
            continue;
        }
        let start = i;
        i += 2;
        while i < lines.len() && is_row(lines[i]) {
            i += 1;
        }
        out.extend(align(&lines[start..i]));
    }
    out.join("\n")
}

/// Whether a line looks like a table row (`| a | b |`).
fn is_row(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('|') && t.len() > 1
}

/// Whether a line is a header separator (`|---|:--:|`).
fn is_separator(line: &str) -> bool {
    is_row(line)
        && cells(line).iter().all(|c| {
            !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')) && c.contains('-')
        })
}

/// The trimmed cells of a row.
fn cells(line: &str) -> Vec<String> {
    let t = line.trim();
    let inner = t.strip_prefix('|').unwrap_or(t);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    inner.split('|').map(|c| c.trim().to_string()).collect()
}

/// Lays out one table (header, separator, rows) with padded columns.
fn align(rows: &[&str]) -> Vec<String> {
    let table: Vec<Vec<String>> = rows.iter().map(|r| cells(r)).collect();
    let columns = table.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![3; columns];
    for (r, row) in table.iter().enumerate() {
        if r == 1 {
            continue;
        }
        for (c, cell) in row.iter().enumerate() {
            widths[c] = widths[c].max(cell.chars().count());
        }
    }
    table
        .iter()
        .enumerate()
        .map(|(r, row)| {
            let padded: Vec<String> = (0..columns)
                .map(|c| {
                    if r == 1 {
                        "-".repeat(widths[c])
                    } else {
                        let cell = row.get(c).map_or("", String::as_str);
                        let pad = widths[c] - cell.chars().count();
                        format!("{cell}{}", " ".repeat(pad))
                    }
                })
                .collect();
            format!("| {} |", padded.join(" | "))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tables get aligned columns; text around them is untouched.
    #[test]
    fn aligns_tables_only() {
        let text = "Results:\n|name|size|\n|---|--:|\n|a|1|\n|longer name|12345|\nDone.";
        assert_eq!(
            render(text),
            "Results:\n| name        | size  |\n| ----------- | ----- |\n| a           | 1     |\n| longer name | 12345 |\nDone."
        );
    }

    /// Lines with pipes that are not tables stay as they are.
    #[test]
    fn leaves_non_tables() {
        let text = "| not a table\nplain | text";
        assert_eq!(render(text), text);
    }
}
