//! The aligned text tables of [`crate::WireView`] and [`crate::schema::Layout`].

use core::fmt;

/// How a column is aligned.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Align {
    Left,
    Right,
}

/// Writes `header` and `rows` as columns two spaces apart, each as wide as its widest
/// cell, indented by two spaces, with trailing spaces trimmed.
pub(crate) fn write<const N: usize>(
    f: &mut fmt::Formatter<'_>,
    header: [&str; N],
    align: [Align; N],
    rows: &[[String; N]],
) -> fmt::Result {
    let mut widths = header.map(|h| h.chars().count());
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |f: &mut fmt::Formatter<'_>, cells: [&str; N]| -> fmt::Result {
        let mut text = String::new();
        for ((cell, width), align) in cells.iter().zip(widths).zip(align) {
            let pad = " ".repeat(width - cell.chars().count());
            text.push_str("  ");
            match align {
                Align::Left => {
                    text.push_str(cell);
                    text.push_str(&pad);
                }
                Align::Right => {
                    text.push_str(&pad);
                    text.push_str(cell);
                }
            }
        }
        writeln!(f, "{}", text.trim_end())
    };
    line(f, header)?;
    for row in rows {
        line(f, row.each_ref().map(String::as_str))?;
    }
    Ok(())
}
