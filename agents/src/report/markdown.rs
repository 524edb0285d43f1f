//! Markdown tables: a header, its alignment, rows, rendered as GitHub-flavoured markdown. Every
//! table a report writes (comparisons, the analysis, the thesis reproduction) is one of these.

use std::fmt;

/// A markdown table.
#[derive(Clone, Debug, Default)]
pub struct Table {
    head: Vec<String>,
    /// Columns from this index on are right-aligned (numbers).
    numbers_from: usize,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers, every column left-aligned.
    pub fn new<S: Into<String>>(head: impl IntoIterator<Item = S>) -> Table {
        let head: Vec<String> = head.into_iter().map(Into::into).collect();
        Table {
            numbers_from: head.len(),
            head,
            rows: Vec::new(),
        }
    }

    /// Right-align the columns from `column` on (they hold numbers).
    pub fn numbers_from(mut self, column: usize) -> Table {
        self.numbers_from = column;
        self
    }

    /// Add a row.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Table {
        self.rows.push(cells.into_iter().map(Into::into).collect());
        self
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "| {} |", self.head.join(" | "))?;
        let align: String = (0..self.head.len())
            .map(|c| if c >= self.numbers_from { "---:|" } else { "---|" })
            .collect();
        writeln!(f, "|{align}")?;
        for r in &self.rows {
            writeln!(f, "| {} |", r.join(" | "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_header_alignment_and_rows() {
        let mut t = Table::new(["series", "welfare", "w = 1"]).numbers_from(1);
        t.row(["mtf", "1.0", "2.0"]).row(["stride", "0.5", "0.25"]);
        assert_eq!(
            t.to_string(),
            "| series | welfare | w = 1 |\n|---|---:|---:|\n| mtf | 1.0 | 2.0 |\n| stride | 0.5 | 0.25 |\n"
        );
        assert_eq!(Table::new(["a", "b"]).to_string(), "| a | b |\n|---|---|\n");
    }
}
