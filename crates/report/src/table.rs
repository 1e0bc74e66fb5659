//! What every renderer's tables are made of: the table itself and the cells of numbers and of
//! missing values. Markdown and HTML differ only in markup.

/// MB/s (10^6 B/s) with one decimal, as the seeds' tables print it.
pub fn mb(v: f64) -> String {
    format!("{v:.1}")
}

/// The cell of a value a document does not have.
pub fn dash() -> String {
    "–".to_string()
}

/// A table as every renderer shows it: Markdown and HTML differ only in markup.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Column titles (units in brackets) and whether the column holds numbers (aligned right).
    pub columns: Vec<(&'static str, bool)>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new(columns: &[(&'static str, bool)], rows: Vec<Vec<String>>) -> Table {
        Table {
            columns: columns.to_vec(),
            rows,
        }
    }

    /// The table without the columns named in `optional` whose every cell is a dash: a
    /// network test has no IOPS, CPU per I/O or /proc/PID/io check, and a column of dashes
    /// says nothing but "this is a disk's table".
    pub(crate) fn without_empty(mut self, optional: &[&str]) -> Table {
        let empty: Vec<usize> = (0..self.columns.len())
            .filter(|&c| {
                optional.contains(&self.columns[c].0)
                    && self
                        .rows
                        .iter()
                        .all(|r| r.get(c).is_none_or(|cell| *cell == dash()))
            })
            .collect();
        let keep = |c: &usize| !empty.contains(c);
        self.columns = (0..self.columns.len())
            .filter(keep)
            .map(|c| self.columns[c])
            .collect();
        for r in &mut self.rows {
            *r = (0..r.len()).filter(keep).map(|c| r[c].clone()).collect();
        }
        self
    }
}
