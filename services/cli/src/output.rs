//! Printing results: a table fitted to the terminal for people, the API's objects as JSON or
//! YAML for programs. Colour only on a terminal, and never with `NO_COLOR`
//! (<https://no-color.org>).

use std::io::IsTerminal;

use serde_json::Value;

use crate::args::Format;
use crate::error::CliError;

/// How a table is drawn on this stdout.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub colour: bool,
    /// The widest line; `None`: as wide as the cells need (stdout is not a terminal).
    pub width: Option<usize>,
}

impl Style {
    pub fn detect() -> Style {
        let tty = std::io::stdout().is_terminal();
        let width = if tty {
            terminal_size::terminal_size().map(|(w, _)| w.0 as usize)
        } else {
            None
        }
        .or_else(|| std::env::var("COLUMNS").ok()?.parse().ok());
        Style {
            colour: colour_wanted(tty, std::env::var_os("NO_COLOR").as_deref()),
            width,
        }
    }
}

/// Colour on a terminal unless `NO_COLOR` is set to anything but the empty string.
pub fn colour_wanted(stdout_is_tty: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    stdout_is_tty && no_color.is_none_or(|v| v.is_empty())
}

/// A VM's id in a table: its first 8 characters, enough to tell one's own VMs apart.
pub fn short_id(id: &str) -> String {
    id.chars().take(8).collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Colour {
    Green,
    Yellow,
    Red,
}

impl Colour {
    fn code(self) -> &'static str {
        match self {
            Colour::Green => "32",
            Colour::Yellow => "33",
            Colour::Red => "31",
        }
    }

    /// The colour of a VM status: done, under way, or failed.
    pub fn of_status(status: &str) -> Option<Colour> {
        match status {
            "provisioned" | "running" => Some(Colour::Green),
            "failed" | "unreachable" => Some(Colour::Red),
            "destroyed" => None,
            _ => Some(Colour::Yellow),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Cell {
    text: String,
    colour: Option<Colour>,
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell { text, colour: None }
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Cell {
        Cell::from(text.to_owned())
    }
}

impl Cell {
    pub fn coloured(text: impl Into<String>, colour: Option<Colour>) -> Cell {
        Cell {
            text: text.into(),
            colour,
        }
    }
}

pub struct Table {
    headers: Vec<&'static str>,
    rows: Vec<Vec<Cell>>,
}

/// Columns are separated by this many spaces.
const GAP: usize = 2;
/// No column is squeezed below this many characters (or its header's length).
const NARROWEST: usize = 6;

impl Table {
    pub fn new(headers: Vec<&'static str>) -> Table {
        Table {
            headers,
            rows: vec![],
        }
    }

    pub fn row(&mut self, cells: Vec<Cell>) {
        debug_assert_eq!(cells.len(), self.headers.len());
        self.rows.push(cells);
    }

    /// The widths of the columns: what their cells need, the widest narrowed first until
    /// the table fits `width` (or no column can give more).
    fn widths(&self, width: Option<usize>) -> Vec<usize> {
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.text.chars().count());
            }
        }
        let Some(limit) = width else {
            return widths;
        };
        let floor: Vec<usize> = self
            .headers
            .iter()
            .map(|h| h.chars().count().max(NARROWEST))
            .collect();
        let gaps = GAP * widths.len().saturating_sub(1);
        while widths.iter().sum::<usize>() + gaps > limit {
            let widest = (0..widths.len())
                .filter(|&i| widths[i] > floor[i])
                .max_by_key(|&i| widths[i]);
            match widest {
                Some(i) => widths[i] -= 1,
                None => break,
            }
        }
        widths
    }

    pub fn render(&self, style: Style) -> String {
        let widths = self.widths(style.width);
        let mut out = String::new();
        let header: Vec<Cell> = self.headers.iter().map(|h| Cell::from(*h)).collect();
        line(&mut out, &header, &widths, style.colour, true);
        for row in &self.rows {
            line(&mut out, row, &widths, style.colour, false);
        }
        out
    }
}

/// One line of the table; with `colour`, the header bold and cells in their colour.
fn line(out: &mut String, cells: &[Cell], widths: &[usize], colour: bool, header: bool) {
    let last = cells.len().saturating_sub(1);
    let mut text = String::new();
    for (i, (cell, &width)) in cells.iter().zip(widths).enumerate() {
        let shown = fit(&cell.text, width);
        let pad = if i == last {
            0
        } else {
            width - shown.chars().count() + GAP
        };
        let code = match (colour, header) {
            (false, _) => None,
            (true, true) => Some("1"),
            (true, false) => cell.colour.map(Colour::code),
        };
        match code {
            Some(code) => text.push_str(&format!("\x1b[{code}m{shown}\x1b[0m")),
            None => text.push_str(&shown),
        }
        text.push_str(&" ".repeat(pad));
    }
    out.push_str(text.trim_end());
    out.push('\n');
}

/// `text` cut to `width` characters, its end shown as `…` when cut.
fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// One object as `name  value` lines, the names aligned: `vm show`, `me`.
pub fn fields(pairs: &[(&str, String)]) -> String {
    let width = pairs.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
    pairs
        .iter()
        .map(|(name, value)| format!("{name:width$}  {value}\n"))
        .collect()
}

/// Prints `value` (an API answer) as `format` asks: JSON and YAML as it is, a table as
/// `table` draws it.
pub fn print(
    format: Format,
    value: &Value,
    table: impl FnOnce(Style) -> Result<String, CliError>,
) -> Result<(), CliError> {
    let text = match format {
        Format::Json => {
            serde_json::to_string_pretty(value).map_err(|e| CliError::Local(e.to_string()))? + "\n"
        }
        Format::Yaml => serde_saphyr::to_string(value)
            .map_err(|e| CliError::Local(format!("cannot write YAML: {e}")))?,
        Format::Table => table(Style::detect())?,
    };
    print!("{text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(width: Option<usize>) -> Style {
        Style {
            colour: false,
            width,
        }
    }

    fn vms() -> Table {
        let mut table = Table::new(vec!["ID", "NAME", "STATUS", "LAST ERROR"]);
        table.row(vec![
            short_id("0b6f8a4e-1111-2222-3333-444455556666").into(),
            "web-1".into(),
            Cell::coloured("failed", Colour::of_status("failed")),
            "Terraform's validation failed: the template broken cannot be applied".into(),
        ]);
        table
    }

    #[test]
    fn ids_are_shortened_to_8_characters() {
        assert_eq!(short_id("0b6f8a4e-1111-2222-3333-444455556666"), "0b6f8a4e");
    }

    #[test]
    fn a_table_fits_the_terminal_width_by_narrowing_its_widest_column() {
        let text = vms().render(plain(Some(50)));
        for line in text.lines() {
            assert!(line.chars().count() <= 50, "{line:?} is too wide");
        }
        assert!(text.contains("0b6f8a4e  web-1"), "{text}");
        assert!(text.lines().nth(1).unwrap().ends_with('…'));
    }

    #[test]
    fn without_a_width_a_table_shows_every_cell_whole() {
        let text = vms().render(plain(None));
        assert!(text.contains("cannot be applied\n"), "{text}");
        assert!(
            text.starts_with("ID        NAME   STATUS  LAST ERROR\n"),
            "{text}"
        );
    }

    #[test]
    fn a_table_has_no_colour_unless_asked() {
        assert!(!vms().render(plain(None)).contains('\x1b'));
        let coloured = vms().render(Style {
            colour: true,
            width: None,
        });
        assert!(coloured.contains("\x1b[1mID\x1b[0m"));
        assert!(coloured.contains("\x1b[31mfailed\x1b[0m"));
    }

    #[test]
    fn colour_needs_a_terminal_and_no_no_color() {
        assert!(colour_wanted(true, None));
        assert!(!colour_wanted(false, None));
        assert!(!colour_wanted(true, Some("1".as_ref())));
        assert!(colour_wanted(true, Some("".as_ref())));
    }
}
