//! The `-I` initialization steps: parsing, defaults, and the adjustments that
//! `-n` and `--foreign-keys` make, in pgbench's words.

use std::fmt;

/// One initialization step letter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitStep {
    /// `d`: drop the four pgbench tables.
    DropTables,
    /// `t`: create the tables (and partitions).
    CreateTables,
    /// `g`: generate rows on the client and send them with COPY.
    ClientSideGenerate,
    /// `G`: generate rows on the server with `generate_series`.
    ServerSideGenerate,
    /// `v`: `vacuum analyze` every table.
    Vacuum,
    /// `p`: create the primary keys.
    PrimaryKeys,
    /// `f`: create the foreign keys.
    ForeignKeys,
}

/// Every step letter pgbench accepts, in its documented order.
pub const ALL_INIT_STEPS: &str = "dtgGvpf";

/// pgbench's default `-I` value.
pub const DEFAULT_INIT_STEPS: &str = "dtgvp";

impl InitStep {
    /// The step for a letter; `None` for anything else (including space).
    pub fn from_letter(letter: char) -> Option<InitStep> {
        Some(match letter {
            'd' => InitStep::DropTables,
            't' => InitStep::CreateTables,
            'g' => InitStep::ClientSideGenerate,
            'G' => InitStep::ServerSideGenerate,
            'v' => InitStep::Vacuum,
            'p' => InitStep::PrimaryKeys,
            'f' => InitStep::ForeignKeys,
            _ => return None,
        })
    }

    /// The step's letter.
    pub fn letter(self) -> char {
        match self {
            InitStep::DropTables => 'd',
            InitStep::CreateTables => 't',
            InitStep::ClientSideGenerate => 'g',
            InitStep::ServerSideGenerate => 'G',
            InitStep::Vacuum => 'v',
            InitStep::PrimaryKeys => 'p',
            InitStep::ForeignKeys => 'f',
        }
    }

    /// The step's name in the final `done in ...` line.
    pub fn timing_label(self) -> &'static str {
        match self {
            InitStep::DropTables => "drop tables",
            InitStep::CreateTables => "create tables",
            InitStep::ClientSideGenerate => "client-side generate",
            InitStep::ServerSideGenerate => "server-side generate",
            InitStep::Vacuum => "vacuum",
            InitStep::PrimaryKeys => "primary keys",
            InitStep::ForeignKeys => "foreign keys",
        }
    }
}

/// A validated `-I` value: the steps to run, in order, repetitions allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitSteps(Vec<InitStep>);

/// Why a `-I` value was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InitStepsError {
    /// The value is empty.
    Empty,
    /// A character that is neither a step letter nor a space.
    Unrecognized(char),
}

impl fmt::Display for InitStepsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InitStepsError::Empty => f.write_str("no initialization steps specified"),
            InitStepsError::Unrecognized(c) => {
                write!(f, "unrecognized initialization step \"{c}\"")
            }
        }
    }
}

impl InitStepsError {
    /// The `detail:` line pgbench prints after the error, if any.
    pub fn detail(&self) -> Option<String> {
        match self {
            InitStepsError::Empty => None,
            InitStepsError::Unrecognized(_) => Some(format!(
                "Allowed step characters are: \"{ALL_INIT_STEPS}\"."
            )),
        }
    }
}

impl std::error::Error for InitStepsError {}

impl InitSteps {
    /// Parses a `-I` value the way pgbench checks it: it must not be empty,
    /// and every character is a step letter or a space (spaces are ignored).
    pub fn parse(value: &str) -> Result<InitSteps, InitStepsError> {
        if value.is_empty() {
            return Err(InitStepsError::Empty);
        }
        let mut steps = Vec::with_capacity(value.len());
        for c in value.chars() {
            match InitStep::from_letter(c) {
                Some(step) => steps.push(step),
                None if c == ' ' => {}
                None => return Err(InitStepsError::Unrecognized(c)),
            }
        }
        Ok(InitSteps(steps))
    }

    /// The steps run when `-I` is not given.
    pub fn default_steps() -> InitSteps {
        InitSteps::parse(DEFAULT_INIT_STEPS).expect("the default steps are valid")
    }

    /// `-n`: every vacuum step is dropped.
    pub fn without_vacuum(mut self) -> InitSteps {
        self.0.retain(|s| *s != InitStep::Vacuum);
        self
    }

    /// `--foreign-keys`: a foreign-key step is appended unless one is there.
    pub fn with_foreign_keys(mut self) -> InitSteps {
        if !self.0.contains(&InitStep::ForeignKeys) {
            self.0.push(InitStep::ForeignKeys);
        }
        self
    }

    /// The steps in the order they run.
    pub fn steps(&self) -> &[InitStep] {
        &self.0
    }

    /// Whether `step` appears anywhere.
    pub fn contains(&self, step: InitStep) -> bool {
        self.0.contains(&step)
    }
}

impl FromIterator<InitStep> for InitSteps {
    fn from_iter<I: IntoIterator<Item = InitStep>>(steps: I) -> Self {
        InitSteps(steps.into_iter().collect())
    }
}

impl fmt::Display for InitSteps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for step in &self.0 {
            write!(f, "{}", step.letter())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_every_letter_and_spaces_in_any_order() {
        let cases = [
            ("dtgvp", "dtgvp"),
            ("d t G v p f", "dtGvpf"),
            ("fpvGgtd", "fpvGgtd"),
            ("gg", "gg"),
            (" ", ""),
        ];
        for (input, expected) in cases {
            let steps = InitSteps::parse(input).unwrap();
            assert_eq!(steps.to_string(), expected, "input {input:?}");
        }
    }

    #[test]
    fn parse_refuses_like_pgbench() {
        let cases = [
            ("", "no initialization steps specified", None),
            (
                "dxt",
                "unrecognized initialization step \"x\"",
                Some("Allowed step characters are: \"dtgGvpf\"."),
            ),
            (
                "dT",
                "unrecognized initialization step \"T\"",
                Some("Allowed step characters are: \"dtgGvpf\"."),
            ),
        ];
        for (input, message, detail) in cases {
            let err = InitSteps::parse(input).unwrap_err();
            assert_eq!(err.to_string(), message, "input {input:?}");
            assert_eq!(err.detail().as_deref(), detail, "input {input:?}");
        }
    }

    #[test]
    fn no_vacuum_and_foreign_keys_adjust_the_steps_as_pgbench_does() {
        let cases = [
            ("dtgvp", false, true, "dtgvpf"),
            ("dtgvp", true, false, "dtgp"),
            ("vdtgvpv", true, true, "dtgpf"),
            ("fdtg", false, true, "fdtg"),
        ];
        for (input, no_vacuum, fkeys, expected) in cases {
            let mut steps = InitSteps::parse(input).unwrap();
            if no_vacuum {
                steps = steps.without_vacuum();
            }
            if fkeys {
                steps = steps.with_foreign_keys();
            }
            assert_eq!(steps.to_string(), expected, "input {input:?}");
        }
    }
}
