//! Progress lines while rows are loaded, as pgbench prints them.
//!
//! Without `-q` a line is printed each time the count passes a multiple of
//! 100000 rows; with `-q` at most one line per 5 seconds (checked at
//! multiples of 100 rows, and always at the last row when the total is a
//! multiple of 100). On a terminal the lines overwrite each other (`\r`)
//! and the last one is blanked at the end; elsewhere each ends in `\n`.
//!
//! Loaders report counts in chunks (one per buffer sent), possibly from
//! several connections at once; the reporter turns the combined count into
//! the same line stream a single pgbench connection would print.

use std::io::Write;
use std::time::Instant;

const LINE_STEP: i64 = 100_000;
const QUIET_CHECK_STEP: i64 = 100;
const QUIET_SECONDS: f64 = 5.0;

pub struct Progress {
    table: &'static str,
    total: i64,
    done: i64,
    quiet: bool,
    eol: u8,
    start: Instant,
    chars: usize,
    prev_chars: usize,
    log_interval: f64,
}

impl Progress {
    /// Starts the clock for `total` rows of `table`; `terminal` says whether
    /// the output is a terminal.
    pub fn new(table: &'static str, total: i64, quiet: bool, terminal: bool) -> Progress {
        Progress {
            table,
            total,
            done: 0,
            quiet,
            eol: if terminal { b'\r' } else { b'\n' },
            start: Instant::now(),
            chars: 0,
            prev_chars: 0,
            log_interval: 1.0,
        }
    }

    /// Records that `done` rows in all are now loaded, printing the lines
    /// pgbench would have printed on the way.
    pub fn advance(&mut self, done: i64, out: &mut impl Write) {
        let before = self.done;
        self.done = done;
        if self.quiet {
            let j = done / QUIET_CHECK_STEP * QUIET_CHECK_STEP;
            if j <= before || j == 0 {
                return;
            }
            let elapsed = self.start.elapsed().as_secs_f64();
            if j == self.total || elapsed >= self.log_interval * QUIET_SECONDS {
                self.line(j, elapsed, out);
                self.log_interval = (elapsed / QUIET_SECONDS).ceil();
            }
        } else {
            let mut j = (before / LINE_STEP + 1) * LINE_STEP;
            while j <= done {
                let elapsed = self.start.elapsed().as_secs_f64();
                self.line(j, elapsed, out);
                j += LINE_STEP;
            }
        }
    }

    fn line(&mut self, j: i64, elapsed: f64, out: &mut impl Write) {
        let remaining = (self.total - j) as f64 * elapsed / j as f64;
        let text = format!(
            "{j} of {} tuples ({}%) of {} done (elapsed {elapsed:.2} s, remaining {remaining:.2} s)",
            self.total,
            j * 100 / self.total,
            self.table
        );
        self.chars = text.len();
        let mut bytes = text.into_bytes();
        if self.prev_chars > self.chars {
            bytes.resize(self.prev_chars, b' ');
        }
        bytes.push(self.eol);
        // Like pgbench, a failing stderr does not stop the load.
        let _ = out.write_all(&bytes);
        self.prev_chars = self.chars;
    }

    /// Ends the table: on a terminal, blanks the last progress line.
    pub fn finish(&mut self, out: &mut impl Write) {
        if self.chars != 0 && self.eol != b'\n' {
            let mut blank = vec![b' '; self.chars];
            blank.push(b'\r');
            let _ = out.write_all(&blank);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip_times(s: &str) -> String {
        let re = regex::Regex::new(r"\d+\.\d\d s").unwrap();
        re.replace_all(s, "T s").into_owned()
    }

    #[test]
    fn a_line_per_hundred_thousand_rows_whatever_the_chunks() {
        for chunks in [
            vec![350_000],
            vec![1, 99_999, 100_000, 150_000, 350_000],
            vec![99_999, 350_000],
        ] {
            let mut out = Vec::new();
            let mut p = Progress::new("pgbench_accounts", 350_000, false, false);
            let mut done = 0;
            for c in &chunks {
                done = (*c).max(done);
                p.advance(done, &mut out);
            }
            p.finish(&mut out);
            assert_eq!(
                strip_times(&String::from_utf8(out).unwrap()),
                "100000 of 350000 tuples (28%) of pgbench_accounts done (elapsed T s, remaining T s)\n\
                 200000 of 350000 tuples (57%) of pgbench_accounts done (elapsed T s, remaining T s)\n\
                 300000 of 350000 tuples (85%) of pgbench_accounts done (elapsed T s, remaining T s)\n",
                "chunks {chunks:?}"
            );
        }
    }

    #[test]
    fn quiet_prints_the_last_row_only_when_fast() {
        let cases = [
            ("pgbench_accounts", 200_000, 1),
            ("pgbench_tellers", 100, 1),
            ("pgbench_tellers", 50, 0),
        ];
        for (table, total, lines) in cases {
            let mut out = Vec::new();
            let mut p = Progress::new(table, total, true, false);
            p.advance(total / 2, &mut out);
            p.advance(total, &mut out);
            let text = String::from_utf8(out).unwrap();
            assert_eq!(text.lines().count(), lines, "{table} {total}: {text}");
            if lines == 1 {
                assert!(
                    text.starts_with(&format!("{total} of {total} tuples (100%) of {table} done"))
                );
            }
        }
    }

    #[test]
    fn terminal_lines_overwrite_and_are_blanked() {
        let mut out = Vec::new();
        let mut p = Progress::new("pgbench_accounts", 1_000_000, false, true);
        p.advance(1_000_000, &mut out);
        p.finish(&mut out);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.matches('\r').count(), 11);
        assert!(!text.contains('\n'));
        assert!(text.ends_with(&format!(
            "{}\r",
            " ".repeat(text.split('\r').nth(9).unwrap().len())
        )));
    }
}
